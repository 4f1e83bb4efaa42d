package lint

import (
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The types below are written from the formats NVIDIA and Kubeflow publish
// (field names and meaning are the format; the modules are not importable
// here). Fields lint does not read are kept raw so real exports decode.

// API versions of the CRDs lint reads.
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
