#!/usr/bin/env bash
# The measurements behind docs/ARCHITECTURE.md's "NVML: cgo or purego":
# binary sizes, start-up in CPU time (proctime -cpu) of the node binary
# built with cgo (go-nvml), without cgo, and without cgo but linking purego,
# the same NVML queries through go-nvml and through purego against the stub
# (testdata/nvml-stub), and the agent's RSS after SCRAPES scrapes.
#   scripts/nvmlproto/measure.sh [RUNS [SCRAPES]]    (about 5 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-51}; scrapes=${2:-300}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  cpus: $(nproc)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
go build -o "$w/gpunode-cgo" ./cmd/gpunode
CGO_ENABLED=0 go build -o "$w/gpunode-static" ./cmd/gpunode
CGO_ENABLED=0 go build -o "$w/gpunode-purego" ./scripts/nvmlproto/node-purego
go build -o "$w/agent-cgo" ./cmd/gpunode-agent
CGO_ENABLED=0 go build -o "$w/agent-static" ./cmd/gpunode-agent
CGO_ENABLED=0 go build -o "$w/agent-purego" ./scripts/nvmlproto/agent-purego
go build -o "$w/nvml-cgo" ./scripts/nvmlproto/cgo
CGO_ENABLED=0 go build -o "$w/nvml-purego" ./scripts/nvmlproto/purego
CGO_ENABLED=0 go build -o "$w/floor-purego" ./scripts/nvmlproto/floor
testdata/nvml-stub/build.sh "$w/stub"
echo "== sizes (bytes)"
for b in gpunode-cgo gpunode-static gpunode-purego agent-cgo agent-static agent-purego nvml-cgo nvml-purego; do
  printf '%-16s %10d  %s\n' "$b" "$(stat -c %s "$w/$b")" "$(file -b "$w/$b" | cut -d, -f2 | sed 's/^ *//')"
done
echo "== the stub answers both the same way"
for b in nvml-cgo nvml-purego; do
  GPUNODE_NVML_STUB=testdata/nvml-stub/dgx-h100.json LD_LIBRARY_PATH="$w/stub" "$w/$b" | md5sum | sed "s/-$/$b/"
done
echo "== start-up (median of $runs round-robin runs; CPU_MS is user+sys)"
GPUNODE_NVML_STUB=testdata/nvml-stub/dgx-h100.json LD_LIBRARY_PATH="$w/stub" go run ./scripts/proctime -cpu -n "$runs" true \
  "$w/floor-purego" "$w/gpunode-cgo version" "$w/gpunode-static version" "$w/gpunode-purego version" \
  "$w/gpunode-cgo bind --node 0 --quiet -- true" "$w/gpunode-static bind --node 0 --quiet -- true" "$w/gpunode-purego bind --node 0 --quiet -- true" \
  "$w/nvml-cgo" "$w/nvml-purego"
echo "== agent RSS after $scrapes scrapes (fake GPU backend: the runtime's and libc's share, not NVML's)"
port=$((19000 + RANDOM % 900))
for b in agent-cgo agent-static agent-purego; do
  port=$((port + 1))
  scripts/agent-rss.sh "$w/$b" "$port" "$scrapes" || true # its last line waits for the agent ended by SIGTERM
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
