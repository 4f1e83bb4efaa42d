#!/usr/bin/env bash
# The performance contract: every speed target of the project measured in one
# run, next to its target and, where the anchor tool is installed here, the
# anchor measured in the same run (numactl, taskset, hwloc's lstopo, a Go
# hello-world; the conformance module's kubelet with CONFORMANCE=1).
#   scripts/bench.sh              all figures (about 3 minutes on 2 cores)
#   RUNS=101 scripts/bench.sh     more whole-process runs
#   CONFORMANCE=1 scripts/bench.sh  also kubelet's merge vs gpunode's (slow to build)
# In-process figures are `go test -bench` CPU time per op; whole-process
# figures are median wall times from scripts/proctime (round robin runs).
# The README's figures come from this script's output.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-51}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== machine"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  cpus: $(nproc)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')  load: $(cut -d' ' -f1-3 /proc/loadavg)"
go version

echo "== build"
# As installed (README, deploy/Dockerfile): gpunode (node commands) built
# without cgo, a static executable that hands commands needing NVML to
# gpunode-agent; gpunode-full beside it (k8s, bench, agent, report, which
# gpunode execs). gpunode-cgo is the node binary as a plain 'go build' with
# cgo on gives it (NVML linked, dynamic loader and libc start-up), for
# comparison.
CGO_ENABLED=0 go build -o "$work/gpunode" ./cmd/gpunode
go build -o "$work/gpunode-full" ./cmd/gpunode-full
CGO_ENABLED=1 go build -o "$work/gpunode-cgo" ./cmd/gpunode
mkdir -p "$work/hello"
cat >"$work/hello/main.go" <<'GO'
package main

import "os"

func main() { os.Stdout.WriteString("hello\n") }
GO
(cd "$work/hello" && GOFLAGS= go mod init hello >/dev/null 2>&1 && CGO_ENABLED=0 go build -o "$work/hello-bin" .)
# The floor of a Go launcher: a Go program that only execs true, without cgo
# and with cgo (which gpunode has, for NVML: the dynamic loader, libc's
# start-up and pthread-created threads).
mkdir -p "$work/hexec" "$work/hexec-cgo"
cat >"$work/hexec/main.go" <<'GO'
package main

import (
	"os"
	"syscall"
)

func main() { _ = syscall.Exec("/bin/true", []string{"true"}, os.Environ()) }
GO
cat >"$work/hexec-cgo/main.go" <<'GO'
package main

// static int one(void) { return 1; }
import "C"

import (
	"os"
	"syscall"
)

func main() { _ = C.one(); _ = syscall.Exec("/bin/true", []string{"true"}, os.Environ()) }
GO
(cd "$work/hexec" && GOFLAGS= go mod init hexec >/dev/null 2>&1 && CGO_ENABLED=0 go build -o "$work/hexec-bin" .)
have_cgo_floor=0
(cd "$work/hexec-cgo" && GOFLAGS= go mod init hexeccgo >/dev/null 2>&1 && CGO_ENABLED=1 go build -o "$work/hexec-cgo-bin" . 2>/dev/null) && have_cgo_floor=1
# Each binary's package list is taken once and matched from the variable:
# 'go list | grep -q' under pipefail reads as no match when grep exits at
# its match before go list has written everything (SIGPIPE, 141).
kubelet_linked=no
for b in gpunode gpunode-full; do
  size=$(stat -c %s "$work/$b")
  deps=$(go list -deps ./cmd/$b)
  pkgs=$(wc -l <<<"$deps")
  k8spkgs=$(grep -c '^k8s.io/\|^sigs.k8s.io/' <<<"$deps" || true)
  printf '%s: binary %.1f MB, %d packages linked (%d from k8s.io / sigs.k8s.io)\n' "$b" "$(echo "$size / 1000000" | bc -l)" "$pkgs" "$k8spkgs"
  if [ "$b" = gpunode-full ] && grep -q '^k8s.io/kubelet/config/v1beta1$' <<<"$deps"; then kubelet_linked=yes; fi
done
echo "k8s.io/kubelet/config/v1beta1 linked into gpunode-full: $kubelet_linked"

echo "== package inits at start-up (GODEBUG=inittrace=1 gpunode version, 21 runs)"
for i in $(seq 1 21); do GODEBUG=inittrace=1 "$work/gpunode" version 2>"$work/inittrace.node.$i" >/dev/null; done
awk '{ s += $5 } END { printf "gpunode: %d package inits, %.2f ms per start (sum of clock times / 21)\n", NR / 21, s / 21 }' "$work"/inittrace.node.*
echo "== gpunode-full's package inits (GODEBUG=inittrace=1 gpunode-full version, 21 runs)"
go list -deps -json ./cmd/gpunode-full >"$work/deps.json"
for i in $(seq 1 21); do GODEBUG=inittrace=1 "$work/gpunode-full" version 2>"$work/inittrace.$i" >/dev/null; done
m=github.com/gpunode/gpunode/internal
go run ./scripts/initcost -deps "$work/deps.json" -root github.com/gpunode/gpunode/cmd/gpunode-full "$work"/inittrace.[0-9]* -- \
  k8s.io/dynamic-resource-allocation/cel,k8s.io/dynamic-resource-allocation/structured,k8s.io/dynamic-resource-allocation/resourceclaim \
  $m/bench \
  $m/k8s/dra,$m/k8s/lint,$m/k8s/kubeletcfg,$m/k8s/admit,$m/k8s/place,$m/k8s/objects,$m/bench | tee "$work/inits.txt"

# results: "figure|measured|target|verdict" lines collected for the summary.
results=()
add() { results+=("$1|$2|$3|$4"); }
# le A B: A <= B for decimals.
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
verdict() { # a figure that was not measured (a failed benchmark) is n/a, never met
  if ! [[ "$1" =~ ^[0-9.]+$ ]]; then echo n/a; elif le "$1" "$2"; then echo met; else echo MISSED; fi
}

echo "== whole process (median of $runs round-robin runs, ms)"
cmds=(true "$work/hello-bin" "$work/hexec-bin" "$work/gpunode version" "$work/gpunode bind --node 0 --quiet -- true" "$work/gpunode-full version")
[ "$have_cgo_floor" = 1 ] && cmds+=("$work/hexec-cgo-bin")
cmds+=("$work/gpunode-cgo bind --node 0 --quiet -- true")
have_numactl=0
if command -v numactl >/dev/null; then cmds+=("numactl --cpunodebind=0 --membind=0 true"); have_numactl=1; fi
command -v taskset >/dev/null && cmds+=("taskset -c 0 true")
cmds+=("$work/gpunode topo --root testdata/hosts/dgx-h100 -o json")
have_lstopo=0
if command -v lstopo-no-graphics >/dev/null; then
  cmds+=("$work/gpunode topo -o json" "lstopo-no-graphics --of xml")
  have_lstopo=1
fi
cmds+=("$work/gpunode audit --root testdata/hosts/dgx-h100 --profile training --gpu-backend none -o json")
# tuned-adm verify needs the TuneD daemon; it is the audit anchor only where it runs.
have_tuned=0
if command -v tuned-adm >/dev/null; then
  if tuned_out=$(timeout 20 tuned-adm verify 2>&1); then
    cmds+=("tuned-adm verify"); have_tuned=1
  else
    echo "tuned-adm verify does not run here: $(echo "$tuned_out" | head -1)"
  fi
fi
go run ./scripts/proctime -n "$runs" "${cmds[@]}" | tee "$work/proc.txt"
med() { # median ms of the command line $1
  awk -v c="$1" 'NR > 1 { line = $0; sub(/[ ]+[0-9.]+[ ]+[0-9.]+[ ]+[0-9]+[ ]+[0-9]+$/, "", line); if (line == c) print $(NF-3) }' "$work/proc.txt"
}
t_true=$(med true)
t_bind=$(med "$work/gpunode bind --node 0 --quiet -- true")
t_ver=$(med "$work/gpunode version")
t_hello=$(med "$work/hello-bin")
bind_over=$(echo "$t_bind - $t_true" | bc -l)
add "gpunode bind -- true, over true" "$(printf %.2f "$bind_over") ms" "<= 3 ms" "$(verdict "$bind_over" 3)"
t_bind_static=$(med "$work/gpunode-cgo bind --node 0 --quiet -- true")
bind_static_over=$(echo "$t_bind_static - $t_true" | bc -l)
add "  for comparison: a cgo build (NVML linked), over true" "$(printf %.2f "$bind_static_over") ms" "-" "-"
add "  floor: a Go program that only execs true, over true" "$(printf %.2f "$(echo "$(med "$work/hexec-bin") - $t_true" | bc -l)") ms" "-" "-"
if [ "$have_cgo_floor" = 1 ]; then
  add "  floor: the same with cgo (as gpunode, for NVML), over true" "$(printf %.2f "$(echo "$(med "$work/hexec-cgo-bin") - $t_true" | bc -l)") ms" "-" "-"
fi
if [ "$have_numactl" = 1 ]; then
  t_numa=$(med "numactl --cpunodebind=0 --membind=0 true")
  add "  anchor: numactl --cpunodebind=0 --membind=0 true, over true" "$(printf %.2f "$(echo "$t_numa - $t_true" | bc -l)") ms" "-" "-"
fi
add "gpunode version" "$t_ver ms" "<= 5 ms" "$(verdict "$t_ver" 5)"
add "  for comparison: gpunode-full version (every package linked)" "$(med "$work/gpunode-full version") ms" "-" "-"
add "  anchor: static Go hello-world" "$t_hello ms" "-" "-"
t_audit=$(med "$work/gpunode audit --root testdata/hosts/dgx-h100 --profile training --gpu-backend none -o json")
add "gpunode audit, DGX fixture, whole process" "$t_audit ms" "< 50 ms" "$(verdict "$t_audit" 49.999)"
if [ "$have_tuned" = 1 ]; then
  t_tuned=$(med "tuned-adm verify")
  add "  anchor: tuned-adm verify (this machine's active profile)" "$t_tuned ms ($(printf %.1f "$(echo "$t_tuned / $t_audit" | bc -l)")x gpunode audit)" "-" "-"
fi
if [ "$have_lstopo" = 1 ]; then
  t_topo=$(med "$work/gpunode topo -o json"); t_lstopo=$(med "lstopo-no-graphics --of xml")
  add "gpunode topo, this machine, vs lstopo-no-graphics" "$t_topo ms vs $t_lstopo ms ($(printf %.1f "$(echo "$t_lstopo / $t_topo" | bc -l)")x)" "faster than lstopo" "$(verdict "$t_topo" "$t_lstopo")"
fi

echo "== in process (go test -bench)"
bench() { # package pattern benchtime; a failing package is reported, the run goes on
  go test -run '^$' -bench "$2" -benchtime "$3" -benchmem "$1" >"$work/out.txt" 2>&1 || true
  if ! grep '^Benchmark' "$work/out.txt" | tee -a "$work/bench.txt"; then
    echo "$1 $2: no benchmark result:"; grep -v '^\(goos\|goarch\|pkg\|cpu\):' "$work/out.txt" | tail -5
  fi
}
nsop() { # ns/op of benchmark name $1 (exact, without the -N suffix)
  awk -v n="$1" '{ name = $1; sub(/-[0-9]+$/, "", name); if (name == n) for (i = 2; i <= NF; i++) if ($(i+1) == "ns/op") print $i }' "$work/bench.txt" | head -1
}
msop() { local v; v=$(nsop "$1"); if [ -n "$v" ]; then echo "$v / 1000000" | bc -l | xargs printf %.2f; else echo n/a; fi; }
cpuop() { # cpu-ms/op of benchmark $1 (CPU time of the whole test process per op; load-independent)
  local v
  v=$(awk -v n="$1" '{ name = $1; sub(/-[0-9]+$/, "", name); if (name == n) for (i = 2; i <= NF; i++) if ($(i+1) == "cpu-ms/op") print $i }' "$work/bench.txt" | head -1)
  if [ -n "$v" ]; then printf %.2f "$v"; else echo n/a; fi
}
: >"$work/bench.txt"
bench ./internal/topo '^BenchmarkDiscover(DGX|1024CPU)$' 100x
bench ./internal/tune '^BenchmarkAudit$' 50x
bench ./internal/mig '^BenchmarkPlanManyGPUs$' 20x
bench ./internal/k8s/topology '^Benchmark(ParseMergeRequest16NUMA|PlainJSONDecode16NUMA|MergeParsed16NUMA)$' 3x
bench ./internal/k8s/admit '^BenchmarkAdmit' 50x
bench ./internal/agent '^BenchmarkCycle$' 30x

# Discovery figures are CPU per op (the machine is shared: wall time there
# measures the other processes too); wall time is shown next to it.
d=$(cpuop BenchmarkDiscoverDGX); add "BenchmarkDiscoverDGX (CPU; wall $(msop BenchmarkDiscoverDGX) ms)" "$d ms" "< 5 ms" "$(verdict "$d" 4.999)"
d=$(cpuop BenchmarkDiscover1024CPU); add "BenchmarkDiscover1024CPU, 1024 CPUs/64 GPUs (CPU; wall $(msop BenchmarkDiscover1024CPU) ms)" "$d ms" "< 25 ms" "$(verdict "$d" 24.999)"
a=$(cpuop BenchmarkAudit); add "BenchmarkAudit (DGX, training; CPU; wall $(msop BenchmarkAudit) ms)" "$a ms" "< 50 ms" "$(verdict "$a" 49.999)"
# One agent cycle: discovery, the base audit with the IRQ layer, the IRQ
# series and the metrics/report encodings (issue 24 item 8).
c=$(cpuop BenchmarkCycle); add "agent cycle CPU, DGX" "$c ms (wall $(msop BenchmarkCycle) ms)" "<= 50 ms" "$(verdict "$c" 50)"
worst256=0; worst1024=0
for n in tight-infeasible full-feasible mixed-feasible packing-infeasible; do
  v=$(msop "BenchmarkPlanManyGPUs/$n/gpus=256"); le "$v" "$worst256" || worst256=$v
  v=$(msop "BenchmarkPlanManyGPUs/$n/gpus=1024"); le "$v" "$worst1024" || worst1024=$v
done
add "mig plan, worst demand on 256 identical GPUs" "$worst256 ms" "<= 10 ms" "$(verdict "$worst256" 10)"
add "mig plan, worst demand on 1,024 identical GPUs" "$worst1024 ms" "<= 50 ms" "$(verdict "$worst1024" 50)"
p=$(msop BenchmarkParseMergeRequest16NUMA); j=$(msop BenchmarkPlainJSONDecode16NUMA); m=$(msop BenchmarkMergeParsed16NUMA)
lim=n/a
[[ "$j$m" =~ ^[0-9.]+$ ]] && lim=$(echo "2 * ($j + $m)" | bc -l)
add "k8s merge parse, 16 NUMA x 3 x 65,535 hints (10 MB)" "$p ms (plain decode $j ms, merge $m ms)" "<= 2 x (decode + merge) = $(printf %.0f "$lim") ms" "$(verdict "$p" "$lim")"
for b in $(awk '{ name = $1; sub(/-[0-9]+$/, "", name); if (name ~ /^BenchmarkAdmit/) print name }' "$work/bench.txt"); do
  add "$b (per admission, CPU; wall $(msop "$b") ms)" "$(cpuop "$b") ms" "-" "-"
done

echo "== k8s place, whole process on generated clusters (CPU user+sys, best of 3)"
# The cluster exports (kubectl -o json style Lists) come from the place
# package's generator; the decode's in-process figures and their anchor
# (a strict decode of the whole objects) are BenchmarkLoadCluster.
place_cpu() { # nodes.json dir -> best user+sys seconds of 3 runs
  local best=""
  for _ in 1 2 3; do
    /usr/bin/time -f '%U %S' -o "$work/time.txt" "$work/gpunode-full" k8s place --nodes "$1/nodes.json" --pods "$1/pods.json" \
      --workload "$1/workload.yaml" --topology "$1/topology.yaml" -o json >/dev/null || true
    local t; t=$(awk 'END { print $1 + $2 }' "$work/time.txt")
    if [ -z "$best" ] || le "$t" "$best"; then best=$t; fi
  done
  echo "$best"
}
prev=""
for blocks in 2 20 100; do
  d="$work/cluster-$blocks"; mkdir -p "$d"
  go test ./internal/k8s/place -run '^TestWriteBenchCluster$' -bench-cluster "$d" -bench-blocks "$blocks" >/dev/null
  n=$((blocks * 512)); c=$(place_cpu "$d")
  growth="-"; [ -n "$prev" ] && growth="$(printf %.1f "$(echo "$c / $prev" | bc -l)")x the previous"
  echo "k8s place, $n nodes: $c s CPU (growth: $growth; input $(du -sh "$d" | cut -f1))"
  case $n in
    10240) add "k8s place, 10,240 nodes, whole process (CPU)" "$c s" "<= 0.25 s" "$(verdict "$c" 0.25)" ;;
    51200) add "k8s place, 51,200 nodes, whole process (CPU)" "$c s" "<= 1.2 s" "$(verdict "$c" 1.2)" ;;
    *) add "  k8s place, $n nodes, whole process (CPU)" "$c s" "-" "-" ;;
  esac
  prev=$c
done
bench ./internal/k8s/place '^BenchmarkLoadCluster$' 3x
for n in 1024 10240 51200; do
  add "  decode of the $n-node export, typed (planner Node/Pod) vs strict whole-object anchor (CPU)" "$(cpuop "BenchmarkLoadCluster/nodes=$n/typed") ms vs $(cpuop "BenchmarkLoadCluster/nodes=$n/strict-full") ms" "-" "-"
done

echo "== k8s lint, whole process on 10,000 / 20,000 / 40,000 / 80,000 Pods (peak RSS and CPU, best of 2)"
# One multi-document YAML of Pods with GPU limits (as a repository of
# manifests). Lint streams it: each object is decoded, checked by the
# per-object rules and reduced to the cross-object rules' index before the
# next (issue 29 item 3: at most 160 MB at 40,000, growth below linear).
# The anchor is kubeconform on the same file, offline, against the Pod
# schema of kubeconform's own test fixture (its module's
# fixtures/cache/_definitions.json): on PATH, or KUBECONFORM=1 installs
# v0.8.0 from the Go module proxy (the issue measured it at 12.3 s CPU and
# 80 MB for 40,000).
lint_pods() { # n -> a YAML file of n Pods
  awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "apiVersion: v1\nkind: Pod\nmetadata: {name: p%d, namespace: ns%d}\nspec:\n  containers:\n  - name: c\n    image: registry.example.com/app:1\n    resources:\n      limits: {nvidia.com/gpu: \"1\", cpu: \"4\", memory: 16Gi}\n---\n", i, i % 50 }'
}
lint_run() { # command... -> "peakMB cpuS" best of 2 (lowest peak)
  local best="" bc=""
  for _ in 1 2; do
    /usr/bin/time -f '%M %U %S' -o "$work/time.txt" "$@" >/dev/null 2>&1 || true
    local m c; m=$(awk 'END { printf "%.0f", $1 / 1024 }' "$work/time.txt"); c=$(awk 'END { print $2 + $3 }' "$work/time.txt")
    if [ -z "$best" ] || [ "$m" -lt "$best" ]; then best=$m; bc=$c; fi
  done
  echo "$best $bc"
}
kc=$(command -v kubeconform || true)
if [ -z "$kc" ] && [ "${KUBECONFORM:-}" = 1 ]; then
  GOBIN="$work/bin" go install github.com/yannh/kubeconform/cmd/kubeconform@v0.8.0 && kc="$work/bin/kubeconform"
fi
kcdefs="$(go env GOMODCACHE)/github.com/yannh/kubeconform@v0.8.0/fixtures/cache/6dc6142c64b944d783a3e783526114da8e747a14a11d8b32dd1f12e2d89a8330"
if [ -n "$kc" ] && [ -f "$kcdefs" ]; then
  mkdir -p "$work/kcs"; cp "$kcdefs" "$work/kcs/_definitions.json"
  echo '{"$ref": "_definitions.json#/definitions/io.k8s.api.core.v1.Pod"}' >"$work/kcs/pod-v1.json"
else
  kc=""
fi
prev_m=""
for n in 10000 20000 40000 80000; do
  f="$work/lint-$n.yaml"; lint_pods "$n" >"$f"
  read -r m c <<<"$(lint_run "$work/gpunode-full" k8s lint -f "$f")"
  growth="-"; [ -n "$prev_m" ] && growth="$(printf %.2f "$(echo "$m / $prev_m" | bc -l)")x the previous for 2x the input"
  echo "k8s lint, $n Pods ($(du -h "$f" | cut -f1)): peak $m MB, $c s CPU (growth: $growth)"
  case $n in
    40000)
      add "k8s lint, 40,000 Pods, whole process (peak RSS)" "$m MB ($c s CPU; 20k->40k: $growth)" "<= 160 MB" "$(verdict "$m" 160)"
      if [ -n "$kc" ]; then
        read -r km kcpu <<<"$(lint_run "$kc" -summary -schema-location "$work/kcs/{{.ResourceKind}}{{.KindSuffix}}.json" "$f")"
        add "  anchor: kubeconform v0.8.0 on the same 40,000 Pods" "$km MB, $kcpu s CPU" "-" "-"
      else
        add "  anchor: kubeconform on the same 40,000 Pods" "kubeconform not installed (KUBECONFORM=1 installs it)" "-" "n/a"
      fi ;;
    80000)
      add "  k8s lint, 80,000 Pods (growth below linear)" "$m MB ($c s CPU; 40k->80k: $growth)" "< 2x for 2x" "$(verdict "$(echo "$m / $prev_m" | bc -l)" 1.99)" ;;
  esac
  prev_m=$m
done

# --- DRA, start-up ratio and mbw (issue 29 items 2, 4, 5; issue 26 item 4) ---
dra_figures() {
  echo "== DRA: the easy case whole process, the search in process (go test -bench)"
  local S=internal/k8s/dra/testdata/seed args easy easyfull
  args="k8s dra allocate --slices $S/slices-dgx-h100.yaml --classes $S/classes.yaml --claims $S/5.3.1-shared-claim.yaml"
  # As a user runs it (gpunode forwards k8s to gpunode-full by exec), and
  # gpunode-full itself.
  easy="$work/gpunode $args"; easyfull="$work/gpunode-full $args"
  go run ./scripts/proctime -n "$runs" true "$easyfull" "$easy" | tee "$work/dra-proc.txt"
  local t0 te tf
  t0=$(awk 'NR > 1 && $1 == "true" { print $(NF-3) }' "$work/dra-proc.txt")
  tf=$(awk -v b="$work/gpunode-full" 'NR > 1 && $1 == b { print $(NF-3) }' "$work/dra-proc.txt")
  te=$(awk -v b="$work/gpunode" 'NR > 1 && $1 == b { print $(NF-3) }' "$work/dra-proc.txt")
  bench ./internal/k8s/dra '^Benchmark(EasyFitGpunode|EasyFitUpstream|SearchNodesPerSecond|RandomTemplates)$' 5x
  local g u nps worst states
  g=$(msop BenchmarkEasyFitGpunode); u=$(msop BenchmarkEasyFitUpstream)
  add "DRA easy case (one node, a claim that fits), whole process via gpunode" "$te ms (true: $t0 ms)" "<= 30 ms" "$(verdict "$te" 30)"
  add "  the same, gpunode-full itself" "$tf ms" "<= 30 ms" "$(verdict "$tf" 30)"
  add "  in process: gpunode's decision vs anchor: the upstream allocator alone" "$g ms vs $u ms" "-" "-"
  nps=$(awk '{ name = $1; sub(/-[0-9]+$/, "", name); if (name == "BenchmarkSearchNodesPerSecond") for (i = 2; i <= NF; i++) if ($(i+1) == "nodes/s") print $i }' "$work/bench.txt" | head -1)
  # 71,336 nodes/s: the same benchmark on main at 60e2b92 (before), this VM.
  add "DRA search states/s (pigeonhole, 200k states; before: 71336 at 60e2b92)" "${nps:-n/a}" ">= 71336" "$(verdict 71336 "${nps:-0}")"
  worst=$(awk '{ name = $1; sub(/-[0-9]+$/, "", name); if (name == "BenchmarkRandomTemplates") for (i = 2; i <= NF; i++) if ($(i+1) == "worst-ms/node") print $i }' "$work/bench.txt" | head -1)
  states=$(awk '{ name = $1; sub(/-[0-9]+$/, "", name); if (name == "BenchmarkRandomTemplates") for (i = 2; i <= NF; i++) if ($(i+1) == "states/node") print $i }' "$work/bench.txt" | head -1)
  add "DRA random device templates (hidden case's shape), slowest node decision" "${worst:-n/a} ms (${states:-n/a} states)" "<= 100 ms" "$(verdict "${worst:-x}" 100)"
}

startup_ratio() {
  # gpunode version over true against a static Go hello world over true,
  # in CPU time (user+sys of the process, proctime -cpu: on a shared
  # machine it moves far less than the wall time), with the floors of the
  # NVML decision (docs/ARCHITECTURE.md, "NVML: cgo or purego"): a Go
  # program that only execs true, static, with cgo, and linking purego.
  echo "== start-up in CPU time (median of $runs round-robin runs, ms; proctime -cpu)"
  CGO_ENABLED=0 go build -o "$work/hexec-purego-bin" ./scripts/nvmlproto/floor
  CGO_ENABLED=0 go build -o "$work/cobrafloor" ./scripts/cobrafloor
  local c=(true "$work/hello-bin" "$work/gpunode version" "$work/gpunode-cgo version" "$work/cobrafloor version" "$work/hexec-bin" "$work/hexec-purego-bin")
  [ "$have_cgo_floor" = 1 ] && c+=("$work/hexec-cgo-bin")
  go run ./scripts/proctime -cpu -n "$runs" "${c[@]}" | tee "$work/cpu.txt"
  cpu() { awk -v c="$1" 'NR > 1 { line = $0; sub(/[ ]+[0-9.]+[ ]+[0-9.]+[ ]+[0-9]+[ ]+[0-9]+[ ]+[0-9.]+$/, "", line); if (line == c) print $NF }' "$work/cpu.txt"; }
  local ct ch vo so ho r rs
  ct=$(cpu true); ch=$(cpu "$work/hello-bin")
  ho=$(echo "$ch - $ct" | bc -l)
  vo=$(echo "$(cpu "$work/gpunode version") - $ct" | bc -l)
  so=$(echo "$(cpu "$work/gpunode-cgo version") - $ct" | bc -l)
  r=n/a; rs=n/a
  if le 0.001 "$ho"; then
    r=$(printf %.2f "$(echo "$vo / $ho" | bc -l)"); rs=$(printf %.2f "$(echo "$so / $ho" | bc -l)")
  fi
  add "gpunode version over true / hello world over true (CPU)" "${r}x ($(printf %.2f "$vo") vs $(printf %.2f "$ho") ms)" "<= 1.5x" "$(verdict "$r" 1.5)"
  add "  a cgo build of the node binary (NVML linked), same ratio (CPU)" "${rs}x ($(printf %.2f "$so") ms)" "-" "-"
  # The floor of any cobra CLI: scripts/cobrafloor (root, two persistent
  # flags, a 'version' subcommand), static, against the same hello world.
  local fo rf=n/a
  fo=$(echo "$(cpu "$work/cobrafloor version") - $ct" | bc -l)
  le 0.001 "$ho" && rf=$(printf %.2f "$(echo "$fo / $ho" | bc -l)")
  add "  floor: a minimal cobra CLI's version (scripts/cobrafloor), same ratio (CPU)" "${rf}x ($(printf %.2f "$fo") ms)" "-" "-"
  # The same in user-space instructions (callgrind; the load does not move
  # them, the kernel's share of a start, exec and page faults, is not in
  # them): medians of 5 runs.
  if command -v valgrind >/dev/null; then
    instr() {
      local i
      for i in 1 2 3 4 5; do
        # shellcheck disable=SC2086
        GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null $1 2>&1 >/dev/null | awk '/Collected/ { print $4 }'
      done | sort -n | sed -n 3p
    }
    local it ih iv ic
    it=$(instr true); ih=$(instr "$work/hello-bin"); iv=$(instr "$work/gpunode version"); ic=$(instr "$work/cobrafloor version")
    if [[ "$it" =~ ^[0-9]+$ && "$ih" =~ ^[0-9]+$ && "$iv" =~ ^[0-9]+$ && "$ic" =~ ^[0-9]+$ ]] && [ "$ih" -gt "$it" ]; then
      add "  user-space instructions over true: gpunode version / cobrafloor / hello world (callgrind)" "$((iv - it)) / $((ic - it)) / $((ih - it)) ($(printf %.2f "$(echo "($iv - $it) / ($ih - $it)" | bc -l)")x / $(printf %.2f "$(echo "($ic - $it) / ($ih - $it)" | bc -l)")x)" "-" "-"
    fi
  fi
  local f
  for f in "hexec-bin:static" "hexec-cgo-bin:cgo" "hexec-purego-bin:purego linked (CGO_ENABLED=0)"; do
    local b=${f%%:*} v
    v=$(cpu "$work/$b")
    [ -n "$v" ] && add "  floor: a Go program that only execs true, $(echo "${f#*:}"), over true (CPU)" "$(printf %.2f "$(echo "$v - $ct" | bc -l)") ms" "-" "-"
  done
  # The wall-time ratio, from the whole-process run above.
  vo=$(echo "$t_ver - $t_true" | bc -l); ho=$(echo "$t_hello - $t_true" | bc -l)
  r=n/a
  le 0.001 "$ho" && r=$(printf %.2f "$(echo "$vo / $ho" | bc -l)")
  add "  the same in wall time" "${r}x ($(printf %.2f "$vo") vs $(printf %.2f "$ho") ms)" "-" "-"
}

mbw_figures() {
  echo "== bench numa copy vs mbw -t1 (one thread, 256 MiB arrays, the same run)"
  if ! command -v mbw >/dev/null; then
    add "bench numa copy vs mbw -t1" "mbw not installed (apt-get install mbw)" "within 15%" "n/a"
    return
  fi
  # Debian's mbw 1.2.2 -t1 runs glibc's memcpy (its lines say DUMB), -t0
  # the element loop (its lines say MEMCPY): docs/BANDWIDTH.md. bench
  # numa's memcpyMbwMiBps is the first (its memcpy passes call glibc's
  # memcpy, memcpyRoutine), copyMbwMiBps the second; goCopyMbwMiBps is Go's
  # copy (the runtime's memmove), another routine, shown for comparison.
  local m g r i gs=() ms=() m0s=() c0s=() gcs=() out cpus routine="" pin
  json1() { echo "$out" | sed -n "s/.*\"$1\": *\"\{0,1\}\([^\",]*\).*/\1/p" | head -1; }
  # Interleaved, three rounds each, medians: the machine is shared. mbw
  # runs on the CPU bench numa's thread was pinned to (taskset), as
  # internal/bench's TestRealNUMABandwidthVsMbw does.
  for i in 1 2 3; do
    out=$("$work/gpunode-full" bench numa --threads 1 --array-mib 256 --duration 8s --no-progress -o json 2>/dev/null || true)
    gs+=("$(json1 memcpyMbwMiBps)"); c0s+=("$(json1 copyMbwMiBps)"); gcs+=("$(json1 goCopyMbwMiBps)")
    routine=$(json1 memcpyRoutine); cpus=$(json1 cpus)
    pin=()
    [ -n "$cpus" ] && command -v taskset >/dev/null && pin=(taskset -c "$cpus")
    ms+=("$("${pin[@]}" mbw -q -t1 -n 10 256 2>/dev/null | awk '/^AVG/ { for (i = 1; i <= NF; i++) if ($i == "Copy:") print $(i+1) }')")
    m0s+=("$("${pin[@]}" mbw -q -t0 -n 10 256 2>/dev/null | awk '/^AVG/ { for (i = 1; i <= NF; i++) if ($i == "Copy:") print $(i+1) }')")
  done
  echo "bench numa memcpy (${routine:-no routine}) ${gs[*]}; mbw -t1 ${ms[*]}; Go copy ${gcs[*]}; copy loop ${c0s[*]}; mbw -t0 ${m0s[*]} (MiB/s)"
  mid() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
  ratio() { [[ "$1" =~ ^[0-9.]+$ && "$2" =~ ^[0-9.]+$ ]] && printf %.3f "$(echo "$1 / $2" | bc -l)" || echo n/a; }
  m=$(mid "${ms[@]}"); g=$(mid "${gs[@]}")
  r=$(ratio "$g" "$m")
  local v=n/a
  [ "$r" != n/a ] && { if le 0.85 "$r" && le "$r" 1.15; then v=met; else v=MISSED; fi; }
  add "bench numa memcpy as mbw counts / mbw -t1 256 (MiB/s, median of 3; ${routine:-routine n/a})" "$g / $m = ${r}" "0.85-1.15" "$v"
  local gc
  gc=$(mid "${gcs[@]}")
  add "  for comparison: Go's copy (runtime memmove), bench numa goCopyMbwMiBps / mbw -t1 (MiB/s)" "$gc / $m = $(ratio "$gc" "$m")" "-" "-"
  local m0 c0
  m0=$(mid "${m0s[@]}"); c0=$(mid "${c0s[@]}")
  add "  for comparison: the element loop, bench numa copy / mbw -t0 (MiB/s)" "$c0 / $m0 = $(ratio "$c0" "$m0")" "-" "-"
  # The multi-threaded figure beside the single-thread one, per NUMA node
  # (every CPU of the node, as STREAM; GB/s read+written).
  local line
  while read -r line; do
    [ -n "$line" ] && add "  bench numa, node ${line%% *}: copy every CPU / one thread (GB/s)" "${line#* }" "-" "-"
  done < <("$work/gpunode-full" bench numa --duration 10s --no-progress \
    -o 'jsonpath={range .pairs[*]}{.cpuNode}/{.memNode} {.threads} threads {.copyGBps} / {.copyOneThreadGBps}{"\n"}{end}' 2>/dev/null | awk '{ split($1, n, "/"); if (n[1] == n[2]) print n[1], $0 }' | cut -d' ' -f1,3-)
}
# --- end of DRA, start-up ratio and mbw ---
dra_figures
startup_ratio
mbw_figures

if [ "${CONFORMANCE:-0}" = 1 ]; then
  echo "== kubelet (conformance module) vs gpunode"
  # kubelet's own best-effort merge on the largest case it finishes (8 NUMA
  # x 3 lists x 255 hints: seconds and gigabytes), gpunode's on the same input.
  (cd conformance/kubelet && go test -run '^$' -bench '^BenchmarkMerge$/^8numa-3x255$' -benchtime 1x -benchmem . 2>&1 | grep '^Benchmark') | tee "$work/kmerge.txt"
  up=$(awk '$1 ~ /upstream/ { print $3 }' "$work/kmerge.txt"); gn=$(awk '$1 ~ /gpunode/ { print $3 }' "$work/kmerge.txt")
  if [ -n "$up" ] && [ -n "$gn" ]; then
    add "  anchor: kubelet's merge, 8 NUMA x 3 x 255" "$(printf %.0f "$(echo "$up / 1000000" | bc -l)") ms vs gpunode $(printf %.3f "$(echo "$gn / 1000000" | bc -l)") ms ($(printf %.0f "$(echo "$up / $gn" | bc -l)")x)" "-" "-"
  fi
fi

echo
echo "== summary"
{
  echo "FIGURE|MEASURED|TARGET|VERDICT"
  printf '%s\n' "${results[@]}"
} | column -t -s '|'
