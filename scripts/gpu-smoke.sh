#!/usr/bin/env bash
# gpu-smoke.sh: run gpunode's GPU-layer commands on a real NVIDIA node and
# keep every output under $OUT (default ./gpu-smoke-out) for comparison with
# the fake-backend fixtures. Read-only by default; it takes well under 3
# minutes.
#
#   OUT=/tmp/out scripts/gpu-smoke.sh
#   GPU_SMOKE_MUTATE=1 ...   also: persistence on + clocks lock/reset, then
#                            roll them back (journaled, under a temp journal dir)
#   GPU_SMOKE_MIG=1 ...      also: MIG apply smoke-balanced (enables MIG mode;
#                            may need a GPU reset), assert, export, then apply
#                            all-disabled. Only on a GPU nobody else uses.
#
# gpunode needs cgo for its NVML backend. The script uses $GPUNODE, else
# ./bin/gpunode when present (build it on a machine with gcc:
# 'go build -o bin/gpunode ./cmd/gpunode'), else builds with the go toolchain
# found here.
set -u
OUT="${OUT:-./gpu-smoke-out}"
mkdir -p "$OUT"
log() { printf '== %s\n' "$*" | tee -a "$OUT/smoke.log"; }

# run NAME CMD...: run with a 60 s timeout, stdout -> $OUT/NAME, stderr and
# exit code to the log. Never aborts the script.
run() {
	local name="$1"; shift
	log "$name: $*"
	timeout 60 "$@" >"$OUT/$name" 2>"$OUT/$name.stderr"
	local rc=$?
	printf '   exit %d\n' "$rc" | tee -a "$OUT/smoke.log"
	[ -s "$OUT/$name.stderr" ] && sed 's/^/   stderr: /' "$OUT/$name.stderr" | head -5 | tee -a "$OUT/smoke.log"
	return 0
}

G="${GPUNODE:-}"
if [ -z "$G" ] && [ -x ./bin/gpunode ]; then G=./bin/gpunode; fi
if [ -z "$G" ]; then
	log "building gpunode (CGO_ENABLED=1)"
	if CGO_ENABLED=1 timeout 120 go build -o "$OUT/gpunode" ./cmd/gpunode 2>"$OUT/build.stderr"; then
		G="$OUT/gpunode"
	else
		log "cgo build failed (no gcc?); building without cgo: no NVML backend, nvidia-smi only"
		cat "$OUT/build.stderr" >>"$OUT/smoke.log"
		CGO_ENABLED=0 timeout 120 go build -o "$OUT/gpunode" ./cmd/gpunode || { log "build failed"; exit 1; }
		G="$OUT/gpunode"
	fi
fi

# Raw driver state, recorded on hardware (future fixtures).
run nvidia-smi-L.txt nvidia-smi -L
run nvidia-smi-q.xml nvidia-smi -q -x
run nvidia-smi-query.csv nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,pci.device_id,driver_version,persistence_mode,compute_mode,mig.mode.current,mig.mode.pending,clocks.gr,clocks.sm,clocks.mem,clocks.applications.graphics,clocks.applications.memory,clocks.max.graphics,clocks.max.sm,clocks.max.memory,clocks_throttle_reasons.active,ecc.mode.current,ecc.mode.pending,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.aggregate.total,ecc.errors.uncorrected.aggregate.total,power.draw,power.limit,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,memory.total,temperature.gpu,memory.used,utilization.gpu,utilization.memory,count,retired_pages.sbe,retired_pages.dbe,retired_pages.pending,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure --format=csv,nounits
# Recorded for gpunode's parsers (issue 13): NVLink state and error
# counters, the MIG device UUIDs, the help text of --query-gpu (which
# fields this driver knows), the driver's XID lines (dmesg reads the kernel
# ring buffer once and exits; nothing here writes).
run nvidia-smi-nvlink-s.txt nvidia-smi nvlink -s
run nvidia-smi-nvlink-e.txt nvidia-smi nvlink -e
run nvidia-smi-help-query-gpu.txt nvidia-smi --help-query-gpu
run dmesg-xid.txt sh -c 'dmesg 2>/dev/null | grep -e "NVRM: Xid" | tail -n 100; true'
run nvidia-smi-topo.txt nvidia-smi topo -m
run nvidia-smi-mig-lgip.txt nvidia-smi mig -lgip
run nvidia-smi-mig-lgipp.txt nvidia-smi mig -lgipp

run version.txt "$G" version
run gpu-status.txt "$G" gpu status
run gpu-status.json "$G" gpu status -o json
run gpu-status-nvml.json "$G" gpu status --gpu-backend nvml -o json
run gpu-status-smi.json "$G" gpu status --gpu-backend nvidia-smi -o json
run gpu-audit.txt "$G" gpu audit
# The health checks (XID from the kernel log, NVLink counters, fabric,
# reset/recovery, retired pages, call deadlines) through each backend.
run gpu-audit.json "$G" gpu audit -o json
run gpu-audit-nvml.json "$G" gpu audit --gpu-backend nvml -o json
run gpu-audit-smi.json "$G" gpu audit --gpu-backend nvidia-smi -o json
run gpu-audit-timeout.txt "$G" gpu audit --gpu-timeout 30s
run topo-smi.txt "$G" topo --gpu-backend nvidia-smi
run gpu-persistence-dry.txt "$G" gpu persistence on --dry-run
run gpu-clocks-lock-dry.txt "$G" gpu clocks lock --mhz max --dry-run
run topo.txt "$G" topo
run topo.json "$G" topo -o json
run mig-live-profiles.txt "$G" mig live-profiles
run mig-live-profiles.json "$G" mig live-profiles -o json
run mig-profiles-h200-builtin.txt "$G" mig profiles --model H200-141GB
run mig-export.yaml "$G" mig export
run mig-apply-dry.txt "$G" mig apply -f scripts/gpu-smoke-mig.yaml -c smoke-balanced --dry-run
run mig-assert.txt "$G" mig assert -f scripts/gpu-smoke-mig.yaml -c all-disabled
run mps-status.txt "$G" mps status
run mps-start-dry.txt "$G" mps start --gpu 0 --dry-run
run mps-partition-plan.txt "$G" mps partition plan --gpu 0 --chunks 5,3,2
run audit.txt "$G" audit
run audit.json "$G" audit -o json

# Host<->device copies (gpunode bench h2d: pageable/pinned, the GPU's node and
# the farthest node, 512 MiB x 16 copies x 3 samples). Expected on an
# H100/H200 on PCIe Gen5 x16 (63 GB/s theoretical per direction): pinned h2d
# and d2h from the GPU's node about 50-55 GB/s (checked here: 45-58 GB/s),
# pageable well below; remote pinned a few percent to tens of percent lower.
run bench-h2d.txt "$G" bench h2d --gpu 0 --no-progress
run bench-h2d.json "$G" bench h2d --gpu 0 --no-progress -o json --plot "$OUT/bench-h2d.svg"
if command -v python3 >/dev/null && [ -s "$OUT/bench-h2d.json" ]; then
	python3 - "$OUT/bench-h2d.json" <<'PY' 2>&1 | tee -a "$OUT/smoke.log"
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["cases"]:
    if c["memory"] == "pinned" and c["placement"] == "local":
        ok = 45 <= c["gbps"] <= 58
        print("   h2d check: %s pinned local %.1f GB/s (link %s x%s %.1f GB/s): %s" % (
            c["direction"], c["gbps"], r.get("linkGen"), r.get("linkWidth"), r.get("linkGBps", 0),
            "in the expected 45-58 GB/s" if ok else "OUTSIDE the expected 45-58 GB/s for PCIe Gen5 x16"))
PY
fi

if [ "${GPU_SMOKE_MUTATE:-0}" = 1 ]; then
	J=/tmp/gpunode-smoke-journal.$$
	run mut-persistence-on.txt "$G" gpu persistence on --gpu 0 --journal-dir "$J"
	run mut-clocks-lock.txt "$G" gpu clocks lock --mhz max --gpu 0 --journal-dir "$J"
	run mut-status-locked.json "$G" gpu status --gpu 0 -o json
	run mut-clocks-reset.txt "$G" gpu clocks reset --gpu 0 --journal-dir "$J"
	run mut-mps-start.txt "$G" mps start --gpu 0 --sm-partitioning --journal-dir "$J" --state-dir /tmp/gpunode-smoke-mps
	run mut-mps-partition.txt "$G" mps partition add --gpu 0 --chunks 2 --state-dir /tmp/gpunode-smoke-mps
	run mut-mps-status.txt "$G" mps status --partitions --state-dir /tmp/gpunode-smoke-mps
	run mut-mps-stop.txt "$G" mps stop --state-dir /tmp/gpunode-smoke-mps
	run mut-rollback.txt "$G" gpu rollback --journal-dir "$J" --state-dir /tmp/gpunode-smoke-mps
	run mut-status-after.json "$G" gpu status --gpu 0 -o json
fi

if [ "${GPU_SMOKE_MIG:-0}" = 1 ]; then
	J=/tmp/gpunode-smoke-mig-journal.$$
	run mig-apply.txt "$G" mig apply -f scripts/gpu-smoke-mig.yaml -c smoke-balanced --journal-dir "$J"
	run mig-live-profiles-enabled.txt "$G" mig live-profiles
	run mig-assert-applied.txt "$G" mig assert -f scripts/gpu-smoke-mig.yaml -c smoke-balanced
	run mig-export-applied.yaml "$G" mig export
	run nvidia-smi-mig-lgi.txt nvidia-smi mig -lgi
	run nvidia-smi-mig-lgipp-enabled.txt nvidia-smi mig -lgipp
	run mig-rollback.txt "$G" gpu rollback --owner mig --journal-dir "$J"
	run mig-export-after.yaml "$G" mig export
fi
log "done; outputs in $OUT"
