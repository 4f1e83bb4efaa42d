#!/usr/bin/env bash
# fleet-image-test.sh: build deploy/Dockerfile's image with rootful Podman and
# run it as deploy/daemonset.yaml runs the agent, on a captured DGX H100.
#
#   scripts/fleet-image-test.sh [--from-source]   (as root; podman, runc, cc,
#                                   curl, promtool, apt-get and dpkg-deb)
#
# No registry is reached. The bases the Dockerfile takes as build arguments
# are assembled here from Debian packages (apt-get download + dpkg-deb -x,
# then podman import):
#   BASE     the runtime base: libc6 and its libgcc-s1, an /etc/passwd
#            (root, nonroot 65532) and nothing else (the agent is a cgo
#            binary that needs only glibc; the NVIDIA toolkit brings NVML);
#   BUILDER  (--from-source only) the Go builder: gcc, binutils and libc6-dev
#            from Debian with the Go toolchain this machine has
#            ($(go env GOROOT)) at /usr/local/go, the layout of the golang
#            image the Dockerfile names by default. The Dockerfile's source
#            stage then runs unchanged (go mod download through the Go module
#            proxy, cgo builds of gpunode and gpunode-full), sharing this
#            machine's module and build caches (podman build --volume; they
#            are not part of the image). A cold build of gpunode-full takes
#            many minutes on 2 cores, so CI uses the default instead:
#   BINARIES=prebuilt (default): cgo binaries built here, copied by the
#            Dockerfile's prebuilt stage; everything after the build is the
#            same.
#
# The container then runs with exactly the pod's settings: the args of
# deploy/daemonset.yaml (read from the file), its env, a read-only root
# filesystem, --cap-drop=ALL, no-new-privileges, and its mounts, each filled
# from the fixture instead of this machine: testdata/hosts/dgx-h100's sys,
# proc and etc read-only at /host/sys, /host/proc and /host/etc (never this
# machine's /sys), an empty pod-resources directory read-only (no kubelet
# here: the agent reports that as info), a writable NFD directory. The NVML
# stub (testdata/nvml-stub) is mounted where the NVIDIA container toolkit
# puts libnvidia-ml.so.1 on a Debian-based image
# (/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1), with its DGX H100 answers
# file (GPUNODE_NVML_STUB, the only setting the pod does not have).
#
# Asserted, from the host through the published port: /readyz is 200 after
# the first audit; /metrics has the 8 GPUs with their NUMA nodes (0-3 on 0,
# 4-7 on 1, as the fixture's sysfs says) and the NVML backend; no failing
# gpu.driver or gpu.backend check; promtool check metrics is clean. Then
# SIGTERM: the agent's own stop time (the container's FinishedAt minus the
# time the agent logged the signal) must be within 1 s; the wall time of
# `podman kill --signal TERM` + `podman wait` is reported (it adds podman's
# own overhead, seconds on a loaded VM, which is not the agent's).
#
# Environment: GPUNODE_IMAGE_KEEP=1 keeps the work directory and the images;
# GPUNODE_IMAGE_OUT=FILE writes the head of /metrics there (README).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

fail() { echo "fleet image: FAIL: $*" >&2; exit 1; }
for t in podman runc cc curl promtool apt-get dpkg-deb go; do
  command -v "$t" >/dev/null || fail "$t is not installed (.ci/run's fleet image step installs it)"
done
[ "$(id -u)" = 0 ] || fail "rootful Podman: run as root"
from_source=0
case "${1:-}" in
  --from-source) from_source=1 ;;
  "") ;;
  *) echo "usage: $0 [--from-source]" >&2; exit 2 ;;
esac

work=$(mktemp -d /tmp/gpunode-image.XXXXXX)
tag=$$
base_img=localhost/gpunode-ci-base:$tag
builder_img=localhost/gpunode-ci-builder:$tag
image=localhost/gpunode:ci-$tag
ctr=gpunode-ci-$tag

# Podman as it works on this kind of machine (as internal/container's real
# Podman test): runc, cgroupfs, the file events logger.
cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
events_logger = "file"
EOF
export CONTAINERS_CONF="$work/containers.conf"
pm() { podman --cgroup-manager=cgroupfs --runtime runc "$@"; }

cleanup() {
  pm rm -f -t 0 "$ctr" >/dev/null 2>&1 || true
  if [ "${GPUNODE_IMAGE_KEEP:-}" != 1 ]; then
    pm rmi -f "$image" "$base_img" "$builder_img" >/dev/null 2>&1 || true
    rm -rf "$work"
  else
    echo "fleet image: kept $work, $image, $base_img, $builder_img"
  fi
}
trap cleanup EXIT

step_t0=$(date +%s.%N)
step() { awk -v t0="$step_t0" -v t1="$(date +%s.%N)" -v msg="$*" 'BEGIN { printf "fleet image: %6.1fs %s\n", t1 - t0, msg }'; }

# unpack DIR PKG...: download the Debian packages and unpack them into DIR.
unpack() {
  local dir=$1; shift
  mkdir -p "$work/debs" "$dir"
  (cd "$work/debs" && apt-get download -q "$@" >/dev/null 2>"$work/apt.err") ||
    { cat "$work/apt.err" >&2; fail "apt-get download $*"; }
  local p f
  for p in "$@"; do
    f=$(ls "$work/debs/${p}"_*.deb 2>/dev/null | head -1)
    [ -n "$f" ] || fail "apt-get download $p: no .deb"
    dpkg-deb -x "$f" "$dir"
  done
}
passwd() {
  mkdir -p "$1/etc" "$1/tmp" "$1/root"
  chmod 1777 "$1/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$1/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$1/etc/group"
}

# The runtime base.
unpack "$work/base" libc6 libgcc-s1 gcc-12-base
passwd "$work/base"
tar -C "$work/base" -cf "$work/base.tar" .
pm import -q "$work/base.tar" "$base_img" >/dev/null
step "runtime base $base_img: $(du -sk "$work/base" | cut -f1) KiB from Debian libc6, libgcc-s1"

# The binaries: by default (BINARIES=prebuilt) builds made here (gpunode
# static, gpunode-agent and gpunode-full cgo) with the
# flags the Dockerfile's source stage uses (-ldflags "-s -w"; without
# -trimpath, so CI's test step has compiled every package already); with
# --from-source the Dockerfile's own source stage builds them in a builder
# base assembled here.
mkdir -p "$work/ctx/bin"
if [ "$from_source" = 1 ]; then
  # Debian's C toolchain (the closure of gcc, libc6-dev and dash, as apt
  # resolves it) and this machine's Go toolchain.
  mapfile -t cpkgs < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances gcc libc6-dev dash 2>/dev/null | grep -v '^[ <]' | sort -u)
  [ "${#cpkgs[@]}" -gt 10 ] || fail "apt-cache depends gcc libc6-dev dash: ${cpkgs[*]}"
  unpack "$work/builder" "${cpkgs[@]}"
  passwd "$work/builder"
  ln -sf dash "$work/builder/bin/sh"
  goroot=$(go env GOROOT)
  mkdir -p "$work/builder/usr/local"
  cp -a "$goroot" "$work/builder/usr/local/go"
  tar -C "$work/builder" -cf "$work/builder.tar" .
  pm import -q \
    --change 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV GOPATH=/go' --change 'ENV HOME=/root' --change 'ENV GOTOOLCHAIN=local' \
    "$work/builder.tar" "$builder_img" >/dev/null
  rm -rf "$work/builder.tar" "$work/builder"
  step "builder base $builder_img: ${#cpkgs[@]} Debian packages and $(go env GOVERSION) from $goroot"
  modcache=$(go env GOMODCACHE)
  gocache=$(go env GOCACHE)
  mkdir -p "$modcache" "$gocache"
  build_args=(--network host --build-arg BINARIES=source --build-arg "BUILDER=$builder_img"
    --build-arg "GOPROXY=$(go env GOPROXY)"
    --volume "$modcache:/go/pkg/mod" --volume "$gocache:/root/.cache/go-build")
  ctx=$repo
else
  CGO_ENABLED=0 go build -ldflags="-s -w" -o "$work/ctx/bin/" ./cmd/gpunode
  CGO_ENABLED=1 go build -ldflags="-s -w" -o "$work/ctx/bin/" ./cmd/gpunode-agent ./cmd/gpunode-full
  step "binaries built (gpunode static, the others cgo): $(stat -c %s "$work/ctx/bin/gpunode"), $(stat -c %s "$work/ctx/bin/gpunode-agent") and $(stat -c %s "$work/ctx/bin/gpunode-full") bytes"
  build_args=(--build-arg BINARIES=prebuilt)
  ctx=$work/ctx
fi

# The image, from the unchanged Dockerfile.
pm build "${build_args[@]}" --build-arg "BASE=$base_img" \
  -f "$repo/deploy/Dockerfile" -t "$image" "$ctx" >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log" >&2; fail "podman build"; }
size=$(pm image inspect --format '{{.Size}}' "$image")
step "image $image built (BINARIES=$([ "$from_source" = 1 ] && echo source || echo prebuilt)): $size bytes"

# The NVML stub, built with cc.
testdata/nvml-stub/build.sh "$work/stub"

# The pod: deploy/daemonset.yaml's args and env, read from the file.
mapfile -t args < <(awk '/^ *args:/ {f=1; next} f && /^ *- / {sub(/^ *- /, ""); print; next} f {exit}' deploy/daemonset.yaml)
[ "${#args[@]}" -ge 3 ] && [ "${args[0]}" = --root=/host ] && [ "${args[1]}" = --live-root ] ||
  fail "deploy/daemonset.yaml args: ${args[*]}"
mapfile -t envs < <(awk '/^ *env:/ {f=1; next} f && /- name:/ {n=$3; next} f && /value:/ {print n "=" $2; next} f {exit}' deploy/daemonset.yaml)
printf '%s\n' "${envs[@]}" | grep -qx 'NVIDIA_DRIVER_CAPABILITIES=utility' || fail "deploy/daemonset.yaml env: ${envs[*]}"
env_flags=()
for e in "${envs[@]}"; do env_flags+=(-e "$e"); done
listen=$(printf '%s\n' "${args[@]}" | sed -n 's/^--listen=.*:\([0-9]*\)$/\1/p')
[ -n "$listen" ] || fail "deploy/daemonset.yaml args have no --listen=:PORT"
nfd=$(printf '%s\n' "${args[@]}" | sed -n 's/^--nfd-features-dir=//p')
fixture=$repo/testdata/hosts/dgx-h100
mkdir -p "$work/pod-resources" "$work/nfd"
port=$((20000 + $$ % 10000))
echo "fleet image: podman run ... $image ${args[*]}"
pm run -d --name "$ctr" \
  --read-only --read-only-tmpfs=false --cap-drop=ALL --security-opt no-new-privileges --user 0:0 \
  -p "127.0.0.1:$port:$listen" \
  "${env_flags[@]}" \
  -v "$fixture/sys:/host/sys:ro" -v "$fixture/proc:/host/proc:ro" -v "$fixture/etc:/host/etc:ro" \
  -v "$work/pod-resources:/host/var/lib/kubelet/pod-resources:ro" \
  -v "$work/nfd:$nfd" \
  -v "$work/stub/libnvidia-ml.so.1:/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1:ro" \
  -v "$repo/testdata/nvml-stub/dgx-h100.json:/etc/gpunode-nvml-stub.json:ro" -e GPUNODE_NVML_STUB=/etc/gpunode-nvml-stub.json \
  "$image" "${args[@]}" >/dev/null || fail "podman run"

code=
for _ in $(seq 300); do # bounded: 60 s
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz" || true)
  [ "$code" = 200 ] && break
  [ "$(pm inspect --format '{{.State.Running}}' "$ctr")" = true ] || break
  sleep 0.2
done
[ "$code" = 200 ] || { pm logs "$ctr" >&2 || true; fail "/readyz answered '$code', want 200"; }
step "/readyz 200"
# The DaemonSet runs 'gpunode ... agent', which execs the lean gpunode-agent
# (not gpunode-full): the container's process must be that binary.
cpid=$(pm inspect --format '{{.State.Pid}}' "$ctr") || fail "podman inspect $ctr"
exe=$(readlink "/proc/$cpid/exe") || fail "readlink /proc/$cpid/exe"
[ "$(basename "$exe")" = gpunode-agent ] || fail "the agent process runs $exe, want /usr/local/bin/gpunode-agent"
step "agent process: $exe, VmRSS $(awk '/^VmRSS/ {print $2, $3}' "/proc/$cpid/status")"
curl -fsS "http://127.0.0.1:$port/metrics" >"$work/metrics.txt" || fail "GET /metrics"
m=$work/metrics.txt

# 8 GPUs with their NUMA nodes.
gpus=$(grep -c '^gpunode_gpu_info{' "$m" || true)
[ "$gpus" = 8 ] || { grep '^gpunode_gpu_info' "$m" >&2; fail "gpunode_gpu_info: $gpus series, want 8"; }
for g in 0 1 2 3 4 5 6 7; do
  want=$((g / 4))
  grep -qE "^gpunode_gpu_info\{[^}]*gpu=\"GPU$g\"[^}]*numa_node=\"$want\"" "$m" ||
    { grep '^gpunode_gpu_info' "$m" >&2; fail "GPU $g is not on NUMA node $want"; }
done
# The GPUs came through NVML (the stub), and no driver or backend error.
grep -qE '^gpunode_check_status\{check="gpu.driver",[^}]*status="ok"\} 1' "$m" ||
  { grep 'check="gpu' "$m" >&2; fail "gpu.driver is not ok"; }
if grep -E '^gpunode_check_status\{check="gpu\.(driver|backend)[^"]*",[^}]*status="(error|drift|warn)"\} 1' "$m" >&2; then
  fail "a gpu.driver or gpu.backend check fails"
fi
# No kubelet here: the empty pod-resources mount is an info check, not an error.
grep -qE '^gpunode_check_status\{check="k8s.pod.numa",[^}]*status="info"\} 1' "$m" || fail "k8s.pod.numa is not the info check"
# The pod's one writable mount got the NFD feature file.
grep -q '^gpunode.io/audit.pass=' "$work/nfd/gpunode" 2>/dev/null || fail "no NFD feature file in the features.d mount"
promtool check metrics <"$m" >"$work/promtool.txt" 2>&1 || { cat "$work/promtool.txt" >&2; fail "promtool check metrics"; }
[ ! -s "$work/promtool.txt" ] || { cat "$work/promtool.txt" >&2; fail "promtool check metrics printed findings"; }
step "/metrics: 8 GPUs on NUMA 0,0,0,0,1,1,1,1, gpu.driver ok, promtool check metrics clean ($(wc -l <"$m") lines)"
# The image's gpunode is static (no NVML): a GPU command run through it
# hands over to gpunode-agent, which answers through NVML (the stub).
file_out=$(pm exec "$ctr" /usr/local/bin/gpunode --root=/host --live-root gpu status -o json 2>&1) ||
  { echo "$file_out" >&2; fail "gpunode gpu status in the container"; }
echo "$file_out" | grep -q '"backend": "nvml"' || { echo "$file_out" >&2; fail "gpunode gpu status did not answer through NVML (hand-off to gpunode-agent)"; }
n=$(echo "$file_out" | grep -c '"uuid": "GPU-' || true)
[ "$n" = 8 ] || { echo "$file_out" >&2; fail "gpunode gpu status: $n GPUs, want 8"; }
step "static gpunode gpu status: handed to gpunode-agent, NVML backend, 8 GPUs"
if [ -n "${GPUNODE_IMAGE_OUT:-}" ]; then
  { echo "# podman run ... $image ${args[*]}"; echo "# curl -s http://127.0.0.1:$port/metrics"; cat "$m"; } >"$GPUNODE_IMAGE_OUT"
fi

# SIGTERM: the agent's own stop time (its "agent stopping" log line to the
# container's exit as podman records it), and the wall time podman adds.
t0=$(date +%s.%N)
pm kill --signal TERM "$ctr" >/dev/null
rc=$(timeout 30 podman --cgroup-manager=cgroupfs --runtime runc wait "$ctr") || fail "podman wait: no exit within 30 s of SIGTERM"
t1=$(date +%s.%N)
pm logs "$ctr" >"$work/agent.log" 2>&1 || true
stopping=$(grep '"msg":"agent stopping"' "$work/agent.log" | tail -1 | sed -n 's/.*"time":"\([^"]*\)".*/\1/p')
[ -n "$stopping" ] || { tail -5 "$work/agent.log" >&2; fail "no 'agent stopping' log line after SIGTERM"; }
finished=$(pm inspect --format '{{.State.FinishedAt}}' "$ctr")
agent_s=$(awk -v a="$(date -d "$stopping" +%s.%N)" -v b="$(date -d "$(echo "$finished" | sed 's/ [A-Z]*$//')" +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
case "$rc" in 0|143) ;; *) tail -5 "$work/agent.log" >&2; fail "exit status $rc after SIGTERM, want 0 or 143" ;; esac
awk -v s="$agent_s" 'BEGIN { exit !(s >= -0.05 && s <= 1.0) }' ||
  fail "the agent took ${agent_s}s from SIGTERM to exit (its log $stopping, exit $finished), want <= 1 s"
step "SIGTERM: the agent exited ${agent_s}s after it logged the signal (status $rc); podman kill + wait took ${wall_s}s"
echo "fleet image: PASS"
