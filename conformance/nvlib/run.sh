#!/usr/bin/env bash
# Runs gpunode's conformance suite against NVIDIA go-nvlib v0.13.0 (module
# github.com/NVIDIA/go-nvlib, fetched through the Go module proxy on first
# use): MIG profile names read by mig.ParseMigProfile and by go-nvlib.
#   ./run.sh                  corpus + 20,000 random profile strings
#   CASES=200000 ./run.sh     more random strings
#   FUZZTIME=60s ./run.sh     also fuzz for a string the two read differently
set -euo pipefail
cd "$(dirname "$0")"
go mod download
go vet ./...
go test -count=1 -timeout 10m ./... -args -cases="${CASES:-20000}"
if [[ -n "${FUZZTIME:-}" ]]; then
	go test -run '^$' -fuzz FuzzProfileSpelling -fuzztime "$FUZZTIME" .
fi
