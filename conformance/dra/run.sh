#!/usr/bin/env bash
# Runs gpunode's DRA conformance suite: the exact search against the upstream
# structured allocator (k8s.io/dynamic-resource-allocation v0.37.2) on random
# NVIDIA-shaped scenarios, and `dra slices` output against the apiserver's
# ResourceSlice validation (k8s.io/kubernetes v1.37.2).
#   ./run.sh                 5,000 random scenarios
#   CASES=50000 ./run.sh     more
set -euo pipefail
cd "$(dirname "$0")"
go mod download
go vet ./...
go test -count=1 -timeout 60m ./... -args -cases="${CASES:-5000}"
