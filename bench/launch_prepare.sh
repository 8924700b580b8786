#!/usr/bin/env bash
# Run on the build machine before bench/launch_cost.sh: compiles the vector
# add that bench/launch_cost.py times (examples/vector_add.tile for sm_90a,
# the H200) and carries the DLPack header for libtilert's build there.
#
#   bench/launch_prepare.sh [TILEC]        TILEC defaults to build/bin/tilec
#
# Writes (gitignored): .devcarry/launch/vector_add.ptx + .meta
#                      .devcarry/include/dlpack/dlpack.h
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tilec="${1:-${TILEC:-$root/build/bin/tilec}}"
out="$root/.devcarry"
mkdir -p "$out/launch" "$out/include/dlpack"
cp /usr/include/dlpack/dlpack.h "$out/include/dlpack/"
"$tilec" "$root/examples/vector_add.tile" -arch=sm_90a -o "$out/launch/vector_add.ptx"
ls -l "$out/launch"
