#!/usr/bin/env bash
# One call on the GPU machine: build libtilert (runtime only, bench/runtime.sh),
# then bench/launch_cost.py: the host time of one launch of a tiny vector
# add from Python (tilec, Triton, torch) and libtilert's C call alone
# (bench/launch_cost.c, built here with cc), in one run.
#
# Expects .devcarry/launch/vector_add.ptx + .meta and
# .devcarry/include/dlpack/dlpack.h from bench/launch_prepare.sh (carry
# .devcarry with the call). Writes launch_cost.txt under $OUT (or ./bench-out).
#   bench/launch_cost.sh [launch_cost.py options: --n N --calls C --rounds R]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/bench-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# shellcheck source=bench/runtime.sh
. "$root/bench/runtime.sh"     # libtilert in $rt; TILEC_LIB_DIR, PYTHONPATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
python3 "$root/bench/launch_cost.py" --out "$out" "$@" 2>&1 | tee "$out/launch_cost.txt"
exit "${PIPESTATUS[0]}"
