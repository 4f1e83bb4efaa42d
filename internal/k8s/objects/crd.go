package objects

import (
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The CRDs below are written from their published schemas (field names and
// meaning are the format); fields gpunode does not use are kept as raw JSON
// so real exports decode strictly without gpunode importing those projects.

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
