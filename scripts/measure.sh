#!/usr/bin/env bash
# Whole-process wall time (median of N runs) and peak RSS of a gpunode
# command, for the closing notes' performance numbers.
#   scripts/measure.sh [N] -- topo --root testdata/hosts/dgx-h100 -o json
set -euo pipefail
cd "$(dirname "$0")/.."
n=21
if [ "${1:-}" != "--" ]; then n=$1; shift; fi
[ "${1:-}" = "--" ] && shift
bin=$(mktemp -d)/gpunode
go build -o "$bin" ./cmd/gpunode
"$bin" "$@" >/dev/null 2>&1 || true # warm the page cache
times=()
rss=0
tf=$(mktemp)
for _ in $(seq "$n"); do
  t0=$(date +%s%N)
  /usr/bin/time -o "$tf" -f '%M' "$bin" "$@" >/dev/null 2>&1 || true
  t1=$(date +%s%N)
  times+=($(( (t1 - t0) / 1000 )))
  r=$(tail -1 "$tf")
  [ "$r" -gt "$rss" ] && rss=$r
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "gpunode $*: median wall $((median / 1000)).$(printf %03d $((median % 1000))) ms over $n runs (includes /usr/bin/time's fork+exec), peak RSS $((rss / 1024)) MiB"
