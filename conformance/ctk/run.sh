#!/usr/bin/env bash
# Runs gpunode's conformance suite against the NVIDIA Container Toolkit's
# configuration readers (module github.com/NVIDIA/nvidia-container-toolkit
# v1.20.2, fetched through the Go module proxy on first use): the nvidia
# runtime binary and default runtime found in daemon.json, containerd
# config.toml (v1-v3) and CRI-O files, fixture files plus generated ones;
# and CDI spec validation against tags.cncf.io/container-device-interface
# v1.1.2's pkg/cdi (fixtures, CDI's documented examples, 2 x CASES
# generated specs).
#   ./run.sh                 fixtures + 2,000 generated files per runtime
#   CASES=20000 ./run.sh     more
set -euo pipefail
cd "$(dirname "$0")"
go mod download
go vet ./...
go test -count=1 -timeout 10m ./... -args -cases="${CASES:-2000}"
