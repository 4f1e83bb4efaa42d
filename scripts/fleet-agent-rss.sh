#!/bin/bash
# usage (from the repository root): scripts/fleet-agent-rss.sh GPUNODE_FULL_BINARY PORT SCRAPES [VAR=VALUE...]
# Runs the agent on the dgx-h100 fixture (fake GPU file, --interval 1h),
# scrapes /metrics SCRAPES times over one keep-alive curl (gzip, as
# Prometheus asks), prints VmRSS, VmHWM and the anon/file split. Run the
# binary from a copy on disk: a freshly linked file's page cache inflates
# RssFile. The VAR=VALUE arguments go into the agent's environment
# (e.g. GOMEMLIMIT=6MiB GOGC=50).
set -eu
bin=$1; port=$2; n=$3; shift 3
env "$@" "$bin" --root testdata/hosts/dgx-h100 agent --listen "127.0.0.1:$port" --interval 1h --gpu-backend fake \
  --nfd-features-dir "" --log-format text 2>/dev/null &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
cfg=$(mktemp)
for _ in $(seq "$n"); do printf 'url = "http://127.0.0.1:%s/metrics"\noutput = "/dev/null"\n' "$port"; done >"$cfg"
curl -fs -H 'Accept-Encoding: gzip' -K "$cfg"
rm -f "$cfg"
echo "env=[$*] scrapes=$n $(grep -E 'VmRSS|VmHWM|RssAnon|RssFile' "/proc/$pid/status" | tr -s ' \t' ' ' | tr '\n' ' ')"
