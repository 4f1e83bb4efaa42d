package objects

import (
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file is the one home of the shapes of the custom resources gpunode
// reads (the scheduling CRDs 'k8s place' and 'k8s lint' read, then NVIDIA's
// and Kubeflow's, which lint reads). They are written from their published
// schemas (field names and meaning are the format); fields gpunode does not
// use are kept as raw JSON so real exports decode strictly without gpunode
// importing those projects.

// API groups and versions of the objects this package reads.
const (
	GroupVersionKAI            = "kai.scheduler/v1alpha1"
	GroupVersionKueueV1beta1   = "kueue.x-k8s.io/v1beta1"
	GroupVersionKueueV1beta2   = "kueue.x-k8s.io/v1beta2"
	GroupVersionHyperNode      = "topology.volcano.sh/v1alpha1"
	GroupVersionVolcanoBatch   = "batch.volcano.sh/v1alpha1"
	GroupVersionPodGroupAlpha2 = "scheduling.k8s.io/v1alpha2"
	GroupVersionPodGroupAlpha3 = "scheduling.k8s.io/v1alpha3"
	// GroupVersionPodGroupBeta1 is the version kube-scheduler v1.37 watches
	// (GenericWorkload beta); its PodGroup has v1alpha3's fields.
	GroupVersionPodGroupBeta1 = "scheduling.k8s.io/v1beta1"
)

// TopologyLevels is the spec of a KAI or Kueue Topology: node label keys from
// the outermost level (e.g. block) to the innermost (often the hostname).
type TopologyLevels struct {
	Levels []TopologyLevel `json:"levels"`
}

// TopologyLevel is one level of a Topology.
type TopologyLevel struct {
	NodeLabel string `json:"nodeLabel"`
}

// LevelTopology is a KAI (kai.scheduler/v1alpha1) or Kueue
// (kueue.x-k8s.io/v1beta1, v1beta2) Topology object.
type LevelTopology struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TopologyLevels  `json:"spec"`
	Status            json.RawMessage `json:"status,omitempty"`
}

// HyperNode is a Volcano HyperNode (topology.volcano.sh/v1alpha1): one
// network performance domain of the given tier (lower is closer) whose
// members are nodes or lower-tier HyperNodes.
type HyperNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              HyperNodeSpec   `json:"spec"`
	Status            json.RawMessage `json:"status,omitempty"`
}

// HyperNodeSpec is a HyperNode's tier and members.
type HyperNodeSpec struct {
	Tier     int               `json:"tier"`
	TierName string            `json:"tierName,omitempty"`
	Members  []HyperNodeMember `json:"members,omitempty"`
}

// HyperNode member types.
const (
	MemberNode      = "Node"
	MemberHyperNode = "HyperNode"
)

// HyperNodeMember selects nodes or HyperNodes.
type HyperNodeMember struct {
	Type     string         `json:"type"`
	Selector MemberSelector `json:"selector"`
}

// MemberSelector holds exactly one of its matchers.
type MemberSelector struct {
	ExactMatch *struct {
		Name string `json:"name"`
	} `json:"exactMatch,omitempty"`
	RegexMatch *struct {
		Pattern string `json:"pattern"`
	} `json:"regexMatch,omitempty"`
	LabelMatch *metav1.LabelSelector `json:"labelMatch,omitempty"`
}

// VolcanoJob is a Volcano batch.volcano.sh/v1alpha1 Job.
type VolcanoJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              VolcanoJobSpec  `json:"spec"`
	Status            json.RawMessage `json:"status,omitempty"`
}

// VolcanoJobSpec is the part of a Volcano Job's spec placement reads; the
// rest is kept raw.
type VolcanoJobSpec struct {
	SchedulerName           string              `json:"schedulerName,omitempty"`
	MinAvailable            int32               `json:"minAvailable,omitempty"`
	Volumes                 json.RawMessage     `json:"volumes,omitempty"`
	Tasks                   []VolcanoTask       `json:"tasks,omitempty"`
	Policies                json.RawMessage     `json:"policies,omitempty"`
	Plugins                 json.RawMessage     `json:"plugins,omitempty"`
	RunningEstimate         json.RawMessage     `json:"runningEstimate,omitempty"`
	Queue                   string              `json:"queue,omitempty"`
	MaxRetry                int32               `json:"maxRetry,omitempty"`
	TTLSecondsAfterFinished *int32              `json:"ttlSecondsAfterFinished,omitempty"`
	PriorityClassName       string              `json:"priorityClassName,omitempty"`
	MinSuccess              *int32              `json:"minSuccess,omitempty"`
	NetworkTopology         *VolcanoNetTopology `json:"networkTopology,omitempty"`
}

// Volcano network topology modes.
const (
	NetworkTopologyHard = "hard"
	NetworkTopologySoft = "soft"
)

// VolcanoNetTopology is a Volcano Job's networkTopology: mode hard (the
// whole job inside one HyperNode of tier <= highestTierAllowed) or soft.
type VolcanoNetTopology struct {
	Mode               string `json:"mode,omitempty"`
	HighestTierAllowed *int   `json:"highestTierAllowed,omitempty"`
	HighestTierName    string `json:"highestTierName,omitempty"`
}

// VolcanoTask is one task of a Volcano Job: replicas pods from a template.
type VolcanoTask struct {
	Name            string             `json:"name,omitempty"`
	Replicas        int32              `json:"replicas,omitempty"`
	MinAvailable    *int32             `json:"minAvailable,omitempty"`
	Template        v1.PodTemplateSpec `json:"template,omitempty"`
	Policies        json.RawMessage    `json:"policies,omitempty"`
	TopologyPolicy  string             `json:"topologyPolicy,omitempty"`
	MaxRetry        int32              `json:"maxRetry,omitempty"`
	DependsOn       json.RawMessage    `json:"dependsOn,omitempty"`
	PartitionPolicy json.RawMessage    `json:"partitionPolicy,omitempty"`
}

// NVIDIA's and Kubeflow's objects, which 'k8s lint' reads: written from the
// formats NVIDIA and Kubeflow publish (field names and meaning are the
// format; the modules are not importable here). Fields lint does not read
// are kept raw so real exports decode.

// API versions of the NVIDIA and Kubeflow objects.
const (
	GroupVersionComputeDomain = "resource.nvidia.com/v1beta1"
	GroupVersionClusterPolicy = "nvidia.com/v1"
	GroupVersionMPIJobV2beta1 = "kubeflow.org/v2beta1"
	GroupVersionKubeflowV1    = "kubeflow.org/v1"
)

// ComputeDomain is the NVIDIA DRA driver's ComputeDomain
// (resource.nvidia.com/v1beta1): a set of nodes sharing one IMEX domain.
type ComputeDomain struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ComputeDomainSpec `json:"spec"`
	Status            json.RawMessage   `json:"status,omitempty"`
}

// ComputeDomainSpec holds the deprecated numNodes and the channel template.
type ComputeDomainSpec struct {
	NumNodes *int                  `json:"numNodes,omitempty"`
	Channel  *ComputeDomainChannel `json:"channel,omitempty"`
}

// ComputeDomainChannel names the ResourceClaimTemplate the controller
// creates for workload pods (allocationMode Single or All).
type ComputeDomainChannel struct {
	ResourceClaimTemplate struct {
		Name string `json:"name"`
	} `json:"resourceClaimTemplate"`
	AllocationMode string `json:"allocationMode,omitempty"`
}

// MPIJob is a Kubeflow MPIJob (kubeflow.org/v2beta1): replica specs by
// role (Launcher, Worker), each a pod template.
type MPIJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MPIJobSpec      `json:"spec"`
	Status            json.RawMessage `json:"status,omitempty"`
}

// MPIJobSpec is the part of an MPIJob lint reads; the rest stays raw.
type MPIJobSpec struct {
	SlotsPerWorker         *int32                     `json:"slotsPerWorker,omitempty"`
	LauncherCreationPolicy string                     `json:"launcherCreationPolicy,omitempty"`
	RunLauncherAsWorker    *bool                      `json:"runLauncherAsWorker,omitempty"`
	RunPolicy              json.RawMessage            `json:"runPolicy,omitempty"`
	SSHAuthMountPath       string                     `json:"sshAuthMountPath,omitempty"`
	MPIImplementation      string                     `json:"mpiImplementation,omitempty"`
	MPIReplicaSpecs        map[string]*MPIReplicaSpec `json:"mpiReplicaSpecs"`
}

// MPIReplicaSpec is one role of an MPIJob.
type MPIReplicaSpec struct {
	Replicas      *int32             `json:"replicas,omitempty"`
	Template      v1.PodTemplateSpec `json:"template"`
	RestartPolicy string             `json:"restartPolicy,omitempty"`
}

// ClusterPolicy is the GPU Operator's ClusterPolicy (nvidia.com/v1). Its
// spec has dozens of component blocks; lint reads the ones below and
// ignores the others (decoded leniently: an operator upgrade adds fields).
type ClusterPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              OperatorSpec `json:"spec"`
}

// OperatorSpec is the ClusterPolicy spec or the gpu-operator chart's
// values (the chart uses the same block names).
type OperatorSpec struct {
	Operator struct {
		DefaultRuntime string `json:"defaultRuntime,omitempty"`
	} `json:"operator"`
	Driver       Component         `json:"driver"`
	Toolkit      Component         `json:"toolkit"`
	DevicePlugin DevicePluginBlock `json:"devicePlugin"`
	DCGM         Component         `json:"dcgm"`
	DCGMExporter Component         `json:"dcgmExporter"`
	GFD          Component         `json:"gfd"`
	MIGManager   MIGManagerBlock   `json:"migManager"`
	MIG          struct {
		Strategy string `json:"strategy,omitempty"`
	} `json:"mig"`
	CDI Component `json:"cdi"`
}

// Component is a block with an enabled switch (nil: the operator's
// default, enabled).
type Component struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// On reports whether the component runs (absent means enabled).
func (c Component) On() bool { return c.Enabled == nil || *c.Enabled }

// DevicePluginBlock is devicePlugin: enabled and the ConfigMap with the
// plugin's configs (name) and the key nodes use without a label (default).
type DevicePluginBlock struct {
	Component
	Config *struct {
		Name    string `json:"name,omitempty"`
		Default string `json:"default,omitempty"`
	} `json:"config,omitempty"`
}

// MIGManagerBlock is migManager: enabled and its ConfigMap.
type MIGManagerBlock struct {
	Component
	Config *struct {
		Name    string `json:"name,omitempty"`
		Default string `json:"default,omitempty"`
	} `json:"config,omitempty"`
}

// DevicePluginConfig is the NVIDIA k8s-device-plugin's config file
// (version v1), as a file or a ConfigMap value.
type DevicePluginConfig struct {
	Version   string          `json:"version"`
	Flags     DPFlags         `json:"flags,omitempty"`
	Resources json.RawMessage `json:"resources,omitempty"`
	Sharing   DPSharing       `json:"sharing,omitempty"`
	Imex      json.RawMessage `json:"imex,omitempty"`
	Health    json.RawMessage `json:"health,omitempty"`
}

// DPFlags are the plugin's flags; lint reads migStrategy.
type DPFlags struct {
	MigStrategy              *string         `json:"migStrategy,omitempty"`
	FailOnInitError          *bool           `json:"failOnInitError,omitempty"`
	RestartOnDeviceUnhealthy *bool           `json:"restartOnDeviceUnhealthy,omitempty"`
	NvidiaDriverRoot         *string         `json:"nvidiaDriverRoot,omitempty"`
	NvidiaDevRoot            *string         `json:"nvidiaDevRoot,omitempty"`
	GDSEnabled               *bool           `json:"gdsEnabled,omitempty"`
	MOFEDEnabled             *bool           `json:"mofedEnabled,omitempty"`
	UseNodeFeatureAPI        *bool           `json:"useNodeFeatureAPI,omitempty"`
	DeviceDiscoveryStrategy  *string         `json:"deviceDiscoveryStrategy,omitempty"`
	Plugin                   json.RawMessage `json:"plugin,omitempty"`
	GFD                      json.RawMessage `json:"gfd,omitempty"`
}

// DPSharing holds the two sharing modes (mutually exclusive).
type DPSharing struct {
	TimeSlicing *DPReplicated `json:"timeSlicing,omitempty"`
	MPS         *DPReplicated `json:"mps,omitempty"`
}

// DPReplicated is one sharing mode's settings.
type DPReplicated struct {
	Strategy                   string       `json:"strategy,omitempty"`
	RenameByDefault            bool         `json:"renameByDefault,omitempty"`
	FailRequestsGreaterThanOne *bool        `json:"failRequestsGreaterThanOne,omitempty"`
	Resources                  []DPResource `json:"resources"`
}

// DPResource is one replicated resource.
type DPResource struct {
	Name     string          `json:"name"`
	Rename   string          `json:"rename,omitempty"`
	Devices  json.RawMessage `json:"devices,omitempty"`
	Replicas *int            `json:"replicas"`
}

// GpuConfig is the NVIDIA DRA driver's opaque config for full GPUs
// (resource.nvidia.com/v1beta1 GpuConfig; MigDeviceConfig has the same
// sharing block without time-slicing settings).
type GpuConfig struct {
	metav1.TypeMeta `json:",inline"`
	Sharing         *GpuSharing `json:"sharing,omitempty"`
}

// GpuSharing is a GpuConfig's sharing strategy and its settings.
type GpuSharing struct {
	Strategy          string `json:"strategy"`
	TimeSlicingConfig *struct {
		Interval *string `json:"interval,omitempty"`
	} `json:"timeSlicingConfig,omitempty"`
	MpsConfig *struct {
		DefaultActiveThreadPercentage     *int                         `json:"defaultActiveThreadPercentage,omitempty"`
		DefaultPinnedDeviceMemoryLimit    *resource.Quantity           `json:"defaultPinnedDeviceMemoryLimit,omitempty"`
		DefaultPerDevicePinnedMemoryLimit map[string]resource.Quantity `json:"defaultPerDevicePinnedMemoryLimit,omitempty"`
	} `json:"mpsConfig,omitempty"`
}

// PyTorchJob is a Kubeflow training-operator PyTorchJob (kubeflow.org/v1):
// replica specs by role (Master, Worker).
type PyTorchJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PyTorchJobSpec  `json:"spec"`
	Status            json.RawMessage `json:"status,omitempty"`
}

// PyTorchJobSpec is the part of a PyTorchJob lint reads; the rest stays raw.
type PyTorchJobSpec struct {
	RunPolicy           json.RawMessage            `json:"runPolicy,omitempty"`
	ElasticPolicy       json.RawMessage            `json:"elasticPolicy,omitempty"`
	NprocPerNode        json.RawMessage            `json:"nprocPerNode,omitempty"`
	PyTorchReplicaSpecs map[string]*MPIReplicaSpec `json:"pytorchReplicaSpecs"`
}
