#!/bin/bash
# usage (from the repository root): scripts/agent-rss.sh GPUNODE_FULL_BINARY PORT SCRAPES
# Runs the agent on the dgx-h100 fixture, scrapes /metrics SCRAPES times, prints VmRSS and VmHWM.
bin=$1; port=$2; n=$3
$bin --root testdata/hosts/dgx-h100 agent --listen 127.0.0.1:$port --interval 1h --gpu-backend fake --nfd-features-dir "" --log-format text 2>/dev/null &
pid=$!
for i in $(seq 50); do curl -fs http://127.0.0.1:$port/readyz >/dev/null && break; sleep 0.2; done
for i in $(seq $n); do curl -fs -o /dev/null http://127.0.0.1:$port/metrics; done
echo "$bin scrapes=$n $(grep VmRSS /proc/$pid/status) $(grep VmHWM /proc/$pid/status)"
kill -TERM $pid; wait $pid
