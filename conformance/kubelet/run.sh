#!/usr/bin/env bash
# Runs gpunode's conformance suite against kubelet v1.37.2 (module
# k8s.io/kubernetes, fetched through the Go module proxy on first use).
#   ./run.sh                 differential tests (10,000 cases per policy)
#   BENCH=1 ./run.sh         also the upstream-vs-gpunode benchmarks
#   CASES=100000 ./run.sh    more random cases
set -euo pipefail
cd "$(dirname "$0")"
go mod download
go vet ./...
go test -count=1 -timeout 60m ./... -args -cases="${CASES:-10000}"
if [[ "${BENCH:-0}" == 1 ]]; then
	go test -run '^$' -bench . -benchmem -timeout 60m ./...
fi
