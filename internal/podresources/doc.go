// Package podresources is the running pods' view of a node: it reads the
// kubelet's PodResources API v1 (List and GetAllocatableResources over the
// unix socket /var/lib/kubelet/pod-resources/kubelet.sock, under --root
// through hostfs, bounded by a timeout), places every GPU a container holds
// on its NUMA node (GPU and MIG UUIDs, time-sliced "<uuid>::<replica>" and
// index ids matched against the node's GPUs, else the device plugin's
// topology as kubelet reports it), finds its CPUs and memory nodes (the CPU
// and Memory Managers' exclusive allocations from the API; without them,
// the container's cgroup cpuset), and judges each container that holds GPUs
// with the check k8s.pod.numa: ok when every GPU's NUMA node is among its
// CPUs' nodes and its memory's, drift otherwise, with the kubelet settings
// 'gpunode k8s kubelet recommend' prints as the fix.
//
// The API names pods and containers but carries no pod UID and no
// container id, which is all a cgroup path has. The cgroup of a container
// is found through kubelet's log names (/var/log/containers/
// <pod>_<namespace>_<container>-<id>.log, /var/log/pods/
// <namespace>_<pod>_<uid>; only names are read), or, without them, from the
// one cpuset every container without exclusive CPUs shares (the shared
// pool); when neither decides, the check is an error that says so.
package podresources
