#!/bin/sh
# Build the kubectl-gpunode archives for krew and write the manifest
# (deploy/krew/gpunode.yaml) with the version and sha256 sums filled in.
# Usage: scripts/krew-archive.sh VERSION OUTDIR   (ARCHES="amd64" for one)
set -eu
version=${1:?VERSION (e.g. v0.1.0)}
out=${2:?OUTDIR}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/.." && pwd)
manifest=$(cat "$root/deploy/krew/gpunode.yaml")
for arch in ${ARCHES:-amd64 arm64}; do
	work=$(mktemp -d)
	(cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -o "$work/kubectl-gpunode" ./cmd/kubectl-gpunode)
	# k8s lint renders Helm charts in gpunode-helm, found beside the plugin.
	(cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -o "$work/gpunode-helm" ./cmd/gpunode-helm)
	if [ -f "$root/LICENSE" ]; then cp "$root/LICENSE" "$work/"; else echo "gpunode" >"$work/LICENSE"; fi
	tar -C "$work" -czf "$out/kubectl-gpunode-linux-$arch.tar.gz" kubectl-gpunode gpunode-helm LICENSE
	rm -rf "$work"
	sum=$(sha256sum "$out/kubectl-gpunode-linux-$arch.tar.gz" | cut -d' ' -f1)
	upper=$(echo "$arch" | tr a-z A-Z)
	manifest=$(printf '%s\n' "$manifest" | sed "s/SHA256_LINUX_$upper/$sum/")
done
printf '%s\n' "$manifest" | sed "s/RELEASE/$version/g" >"$out/gpunode.yaml"
echo "$out/gpunode.yaml"
