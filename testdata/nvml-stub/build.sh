#!/bin/sh
# Build the NVML stub: testdata/nvml-stub/build.sh OUTDIR writes
# OUTDIR/libnvidia-ml.so.1 (the soname the NVIDIA container toolkit injects
# and go-nvml dlopens). Needs a C compiler (cc) and nothing else.
set -eu
if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared \
  -Wl,-soname,libnvidia-ml.so.1 \
  -o "$1/libnvidia-ml.so.1" "$here/nvml_stub.c"
