// Package cluster checks gpunode's live-cluster commands against the real
// engine: an in-process kube-apiserver v1.37.2 on embedded etcd and an
// in-process kube-scheduler v1.37.2 with DRA and the gang/topology plugins.
package cluster
