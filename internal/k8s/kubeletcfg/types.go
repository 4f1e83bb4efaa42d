package kubeletcfg

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeletConfiguration is the kubelet.config.k8s.io/v1beta1
// KubeletConfiguration as gpunode decodes it, without linking
// k8s.io/kubelet/config/v1beta1 (whose logging and tracing types pull
// component-base's feature gates, metrics registry and prometheus client
// into every gpunode command's start-up).
//
// The fields gpunode reads come first, with their Go names. Every other
// field of the upstream type follows, sorted by JSON name, with the Go type
// that decodes (and rejects) the same JSON as upstream's: a strict decode
// into this type refuses exactly the unknown fields and the wrongly typed
// values that a strict decode into the upstream type refuses.
// conformance/kubelet checks both by reflection (every JSON name, nesting
// and the types of the read fields) and by decoding a corpus of
// configurations with both types.
type KubeletConfiguration struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`

	// Read by lint, recommend and admit.
	CPUManagerPolicy             string              `json:"cpuManagerPolicy,omitempty"`
	CPUManagerPolicyOptions      map[string]string   `json:"cpuManagerPolicyOptions,omitempty"`
	MemoryManagerPolicy          string              `json:"memoryManagerPolicy,omitempty"`
	ReservedMemory               []MemoryReservation `json:"reservedMemory,omitempty"`
	TopologyManagerPolicy        string              `json:"topologyManagerPolicy,omitempty"`
	TopologyManagerScope         string              `json:"topologyManagerScope,omitempty"`
	TopologyManagerPolicyOptions map[string]string   `json:"topologyManagerPolicyOptions,omitempty"`
	ReservedSystemCPUs           string              `json:"reservedSystemCPUs,omitempty"`
	KubeReserved                 map[string]string   `json:"kubeReserved,omitempty"`
	SystemReserved               map[string]string   `json:"systemReserved,omitempty"`
	KubeReservedCgroup           string              `json:"kubeReservedCgroup,omitempty"`
	SystemReservedCgroup         string              `json:"systemReservedCgroup,omitempty"`
	EnforceNodeAllocatable       []string            `json:"enforceNodeAllocatable,omitempty"`
	EvictionHard                 map[string]string   `json:"evictionHard,omitempty"`
	MergeDefaultEvictionSettings *bool               `json:"mergeDefaultEvictionSettings,omitempty"`
	FeatureGates                 map[string]bool     `json:"featureGates,omitempty"`

	// Known, not read: decoded for the strict check only.
	Address                                   string               `json:"address,omitempty"`
	AllowedUnsafeSysctls                      []string             `json:"allowedUnsafeSysctls,omitempty"`
	Authentication                            Authentication       `json:"authentication"`
	Authorization                             Authorization        `json:"authorization"`
	CgroupDriver                              string               `json:"cgroupDriver,omitempty"`
	CgroupRoot                                string               `json:"cgroupRoot,omitempty"`
	CgroupsPerQOS                             *bool                `json:"cgroupsPerQOS,omitempty"`
	ClusterDNS                                []string             `json:"clusterDNS,omitempty"`
	ClusterDomain                             string               `json:"clusterDomain,omitempty"`
	ConfigMapAndSecretChangeDetectionStrategy string               `json:"configMapAndSecretChangeDetectionStrategy,omitempty"`
	ContainerLogMaxFiles                      *int32               `json:"containerLogMaxFiles,omitempty"`
	ContainerLogMaxSize                       string               `json:"containerLogMaxSize,omitempty"`
	ContainerLogMaxWorkers                    *int32               `json:"containerLogMaxWorkers,omitempty"`
	ContainerLogMonitorInterval               *metav1.Duration     `json:"containerLogMonitorInterval,omitempty"`
	ContainerRuntimeEndpoint                  string               `json:"containerRuntimeEndpoint"`
	ContentType                               string               `json:"contentType,omitempty"`
	CpuCFSQuota                               *bool                `json:"cpuCFSQuota,omitempty"`
	CpuCFSQuotaPeriod                         *metav1.Duration     `json:"cpuCFSQuotaPeriod,omitempty"`
	CpuManagerReconcilePeriod                 metav1.Duration      `json:"cpuManagerReconcilePeriod,omitempty"`
	CrashLoopBackOff                          CrashLoopBackOff     `json:"crashLoopBackOff,omitempty"`
	DefaultPodSysctls                         map[string]string    `json:"defaultPodSysctls,omitempty"`
	EnableContentionProfiling                 bool                 `json:"enableContentionProfiling,omitempty"`
	EnableControllerAttachDetach              *bool                `json:"enableControllerAttachDetach,omitempty"`
	EnableDebugFlagsHandler                   *bool                `json:"enableDebugFlagsHandler,omitempty"`
	EnableDebuggingHandlers                   *bool                `json:"enableDebuggingHandlers,omitempty"`
	EnableProfilingHandler                    *bool                `json:"enableProfilingHandler,omitempty"`
	EnableServer                              *bool                `json:"enableServer,omitempty"`
	EnableSystemLogHandler                    *bool                `json:"enableSystemLogHandler,omitempty"`
	EnableSystemLogQuery                      *bool                `json:"enableSystemLogQuery,omitempty"`
	EventBurst                                int32                `json:"eventBurst,omitempty"`
	EventRecordQPS                            *int32               `json:"eventRecordQPS,omitempty"`
	EvictionMaxPodGracePeriod                 int32                `json:"evictionMaxPodGracePeriod,omitempty"`
	EvictionMinimumReclaim                    map[string]string    `json:"evictionMinimumReclaim,omitempty"`
	EvictionPressureTransitionPeriod          metav1.Duration      `json:"evictionPressureTransitionPeriod,omitempty"`
	EvictionSoft                              map[string]string    `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod                   map[string]string    `json:"evictionSoftGracePeriod,omitempty"`
	FailCgroupV1                              *bool                `json:"failCgroupV1,omitempty"`
	FailSwapOn                                *bool                `json:"failSwapOn,omitempty"`
	FileCheckFrequency                        metav1.Duration      `json:"fileCheckFrequency,omitempty"`
	HairpinMode                               string               `json:"hairpinMode,omitempty"`
	HealthzBindAddress                        string               `json:"healthzBindAddress,omitempty"`
	HealthzPort                               *int32               `json:"healthzPort,omitempty"`
	HttpCheckFrequency                        metav1.Duration      `json:"httpCheckFrequency,omitempty"`
	ImageGCHighThresholdPercent               *int32               `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent                *int32               `json:"imageGCLowThresholdPercent,omitempty"`
	ImageMaximumGCAge                         metav1.Duration      `json:"imageMaximumGCAge,omitempty"`
	ImageMinimumGCAge                         metav1.Duration      `json:"imageMinimumGCAge,omitempty"`
	ImagePullCredentialsVerificationPolicy    string               `json:"imagePullCredentialsVerificationPolicy,omitempty"`
	ImageServiceEndpoint                      string               `json:"imageServiceEndpoint,omitempty"`
	IptablesDropBit                           *int32               `json:"iptablesDropBit,omitempty"`
	IptablesMasqueradeBit                     *int32               `json:"iptablesMasqueradeBit,omitempty"`
	KernelMemcgNotification                   bool                 `json:"kernelMemcgNotification,omitempty"`
	KubeAPIBurst                              int32                `json:"kubeAPIBurst,omitempty"`
	KubeAPIQPS                                *int32               `json:"kubeAPIQPS,omitempty"`
	KubeletCgroups                            string               `json:"kubeletCgroups,omitempty"`
	LocalStorageCapacityIsolation             *bool                `json:"localStorageCapacityIsolation,omitempty"`
	Logging                                   Logging              `json:"logging,omitempty"`
	MakeIPTablesUtilChains                    *bool                `json:"makeIPTablesUtilChains,omitempty"`
	MaxOpenFiles                              int64                `json:"maxOpenFiles,omitempty"`
	MaxParallelImagePulls                     *int32               `json:"maxParallelImagePulls,omitempty"`
	MaxPods                                   int32                `json:"maxPods,omitempty"`
	MemoryReservationPolicy                   string               `json:"memoryReservationPolicy,omitempty"`
	MemorySwap                                MemorySwap           `json:"memorySwap,omitempty"`
	MemoryThrottlingFactor                    *float64             `json:"memoryThrottlingFactor,omitempty"`
	NodeLeaseDurationSeconds                  int32                `json:"nodeLeaseDurationSeconds,omitempty"`
	NodeStatusMaxImages                       *int32               `json:"nodeStatusMaxImages,omitempty"`
	NodeStatusReportFrequency                 metav1.Duration      `json:"nodeStatusReportFrequency,omitempty"`
	NodeStatusUpdateFrequency                 metav1.Duration      `json:"nodeStatusUpdateFrequency,omitempty"`
	OomScoreAdj                               *int32               `json:"oomScoreAdj,omitempty"`
	PodCIDR                                   string               `json:"podCIDR,omitempty"`
	PodLogsDir                                string               `json:"podLogsDir,omitempty"`
	PodPidsLimit                              *int64               `json:"podPidsLimit,omitempty"`
	PodsPerCore                               int32                `json:"podsPerCore,omitempty"`
	Port                                      int32                `json:"port,omitempty"`
	PreloadedImagesVerificationAllowlist      []string             `json:"preloadedImagesVerificationAllowlist,omitempty"`
	ProtectKernelDefaults                     bool                 `json:"protectKernelDefaults,omitempty"`
	ProviderID                                string               `json:"providerID,omitempty"`
	QosReserved                               map[string]string    `json:"qosReserved,omitempty"`
	ReadOnlyPort                              int32                `json:"readOnlyPort,omitempty"`
	RegisterNode                              *bool                `json:"registerNode,omitempty"`
	RegisterWithTaints                        []corev1.Taint       `json:"registerWithTaints,omitempty"`
	RegistryBurst                             int32                `json:"registryBurst,omitempty"`
	RegistryPullQPS                           *int32               `json:"registryPullQPS,omitempty"`
	ResolvConf                                *string              `json:"resolvConf,omitempty"`
	RotateCertificates                        bool                 `json:"rotateCertificates,omitempty"`
	RunOnce                                   bool                 `json:"runOnce,omitempty"`
	RuntimeRequestTimeout                     metav1.Duration      `json:"runtimeRequestTimeout,omitempty"`
	SeccompDefault                            *bool                `json:"seccompDefault,omitempty"`
	SerializeImagePulls                       *bool                `json:"serializeImagePulls,omitempty"`
	ServerTLSBootstrap                        bool                 `json:"serverTLSBootstrap,omitempty"`
	ShowHiddenMetricsForVersion               string               `json:"showHiddenMetricsForVersion,omitempty"`
	ShutdownGracePeriod                       metav1.Duration      `json:"shutdownGracePeriod,omitempty"`
	ShutdownGracePeriodByPodPriority          []ShutdownByPriority `json:"shutdownGracePeriodByPodPriority,omitempty"`
	ShutdownGracePeriodCriticalPods           metav1.Duration      `json:"shutdownGracePeriodCriticalPods,omitempty"`
	SingleProcessOOMKill                      *bool                `json:"singleProcessOOMKill,omitempty"`
	StaticPodPath                             string               `json:"staticPodPath,omitempty"`
	StaticPodURL                              string               `json:"staticPodURL,omitempty"`
	StaticPodURLHeader                        map[string][]string  `json:"staticPodURLHeader,omitempty"`
	StreamingConnectionIdleTimeout            metav1.Duration      `json:"streamingConnectionIdleTimeout,omitempty"`
	SyncFrequency                             metav1.Duration      `json:"syncFrequency,omitempty"`
	SystemCgroups                             string               `json:"systemCgroups,omitempty"`
	TlsCertFile                               string               `json:"tlsCertFile,omitempty"`
	TlsCipherSuites                           []string             `json:"tlsCipherSuites,omitempty"`
	TlsCurvePreferences                       []int32              `json:"tlsCurvePreferences,omitempty"`
	TlsMinVersion                             string               `json:"tlsMinVersion,omitempty"`
	TlsPrivateKeyFile                         string               `json:"tlsPrivateKeyFile,omitempty"`
	Tracing                                   *Tracing             `json:"tracing,omitempty"`
	UserNamespaces                            *UserNamespaces      `json:"userNamespaces,omitempty"`
	VolumePluginDir                           string               `json:"volumePluginDir,omitempty"`
	VolumeStatsAggPeriod                      metav1.Duration      `json:"volumeStatsAggPeriod,omitempty"`
}

// Authentication is authentication.
type Authentication struct {
	Anonymous AuthnAnonymous `json:"anonymous"`
	Webhook   AuthnWebhook   `json:"webhook"`
	X509      AuthnX509      `json:"x509"`
}

// Authorization is authorization.
type Authorization struct {
	Mode    string       `json:"mode,omitempty"`
	Webhook AuthzWebhook `json:"webhook"`
}

// MemorySwap is memorySwap.
type MemorySwap struct {
	SwapBehavior string `json:"swapBehavior,omitempty"`
}

// ShutdownByPriority is one shutdownGracePeriodByPodPriority entry.
type ShutdownByPriority struct {
	Priority                   int32 `json:"priority"`
	ShutdownGracePeriodSeconds int64 `json:"shutdownGracePeriodSeconds"`
}

// CrashLoopBackOff is crashLoopBackOff.
type CrashLoopBackOff struct {
	MaxContainerRestartPeriod *metav1.Duration `json:"maxContainerRestartPeriod,omitempty"`
}

// MemoryReservation is one reservedMemory entry: the memory reserved on a NUMA node.
type MemoryReservation struct {
	Limits   corev1.ResourceList `json:"limits"`
	NumaNode int32               `json:"numaNode"`
}

// Tracing is tracing.
type Tracing struct {
	Endpoint               *string `json:"endpoint,omitempty"`
	SamplingRatePerMillion *int32  `json:"samplingRatePerMillion,omitempty"`
}

// UserNamespaces is userNamespaces.
type UserNamespaces struct {
	IdsPerPod *int64 `json:"idsPerPod,omitempty"`
}

// AuthnX509 is authentication.x509.
type AuthnX509 struct {
	ClientCAFile string `json:"clientCAFile,omitempty"`
}

// AuthnWebhook is authentication.webhook.
type AuthnWebhook struct {
	CacheTTL metav1.Duration `json:"cacheTTL,omitempty"`
	Enabled  *bool           `json:"enabled,omitempty"`
}

// AuthnAnonymous is authentication.anonymous.
type AuthnAnonymous struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// AuthzWebhook is authorization.webhook.
type AuthzWebhook struct {
	CacheAuthorizedTTL   metav1.Duration `json:"cacheAuthorizedTTL,omitempty"`
	CacheUnauthorizedTTL metav1.Duration `json:"cacheUnauthorizedTTL,omitempty"`
}

// Logging is logging (component-base's logging configuration).
type Logging struct {
	FlushFrequency LogFlushFrequency `json:"flushFrequency"`
	Format         string            `json:"format,omitempty"`
	Options        LogFormatOptions  `json:"options,omitempty"`
	Verbosity      uint32            `json:"verbosity"`
	VModule        []LogVModule      `json:"vmodule,omitempty"`
}

// LogFormatOptions is logging.options.
type LogFormatOptions struct {
	JSON LogOutputOptions `json:"json,omitempty"`
	Text LogOutputOptions `json:"text,omitempty"`
}

// LogOutputOptions is logging.options.text and logging.options.json.
type LogOutputOptions struct {
	InfoBufferSize resource.QuantityValue `json:"infoBufferSize,omitempty"`
	SplitStream    bool                   `json:"splitStream,omitempty"`
}

// LogVModule is one logging.vmodule entry.
type LogVModule struct {
	FilePattern string `json:"filePattern"`
	Verbosity   uint32 `json:"verbosity"`
}

// LogFlushFrequency is logging.flushFrequency. Kubelet reads it in two
// spellings: a Go duration string ("5s"), and an integer count of
// nanoseconds as files written before the string form carry it. The value
// remembers its spelling (AsString) so that a file written back keeps it.
type LogFlushFrequency struct {
	Duration metav1.Duration
	// AsString records which of the two forms the file used.
	AsString bool
}

// UnmarshalJSON reads either spelling. The JSON token's first byte decides:
// a quote is the string form, anything else is read as nanoseconds (null
// leaves the value as it was, as for any other integer field).
func (f *LogFlushFrequency) UnmarshalJSON(b []byte) error {
	f.AsString = len(b) > 0 && b[0] == '"'
	if f.AsString {
		return f.Duration.UnmarshalJSON(b)
	}
	ns := int64(f.Duration.Duration)
	if err := json.Unmarshal(b, &ns); err != nil {
		return fmt.Errorf("invalid duration %q: %w", b, err)
	}
	f.Duration.Duration = time.Duration(ns)
	return nil
}

// MarshalJSON writes the value in the spelling it was read in.
func (f LogFlushFrequency) MarshalJSON() ([]byte, error) {
	d := f.Duration.Duration
	if !f.AsString {
		return strconv.AppendInt(nil, int64(d), 10), nil
	}
	// A duration's String() holds digits, '.', '-' and unit letters
	// (µ included, which JSON leaves unescaped): quoting needs no escapes.
	return []byte(`"` + d.String() + `"`), nil
}
