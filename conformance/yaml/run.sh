#!/usr/bin/env bash
# Runs gpunode's conformance suite against sigs.k8s.io/yaml v1.6.0 (and
# through it go.yaml.in/yaml/v2, fetched through the Go module proxy on
# first use): internal/yamljson's YAMLToJSON, YAMLToJSONStrict, Unmarshal,
# UnmarshalStrict and Marshal against sigs.k8s.io/yaml's on the repository's
# fixture files, hand-written edge cases and random documents.
#   ./run.sh                   corpus + 20,000 random documents
#   CASES=200000 ./run.sh      more random documents
#   FUZZTIME=60s ./run.sh      also fuzz for an input the two read differently
#   BENCH=1 ./run.sh           also the YAMLToJSON benchmark (mig-parted file)
set -euo pipefail
cd "$(dirname "$0")"
go mod download
go vet ./...
go test -count=1 -timeout 10m ./... -args -cases="${CASES:-20000}"
if [[ -n "${FUZZTIME:-}" ]]; then
	go test -run '^$' -fuzz FuzzDifferential -fuzztime "$FUZZTIME" -fuzzminimizetime 2s .
fi
if [[ -n "${BENCH:-}" ]]; then
	go test -run '^$' -bench . -benchmem -count 5 .
fi
