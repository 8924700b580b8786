#!/usr/bin/env bash
# Build machine, before bench/validate.sh runs on the GPU machine
# (bench/prepare.sh calls it last; it also runs alone, in about 30 s):
#   .devcarry/validate/   every example compiled for sm_90a on its benchmark
#                         sizes with --report (and the GEMM and attention for
#                         sm_86), and tests/gpu/oob_store.tile with -lineinfo
#                         (bench/validate_report.py --prepare)
#   .devcarry/interp/     every example on small shapes: PTX, inputs and the
#                         IR interpreter's outputs (bench/interp_check.py
#                         --prepare, through the Python package and libtilec)
#   .devcarry/include/    the DLPack header libtilert's build there needs
#   bench/validate_prepare.sh [TILEC]     TILEC defaults to build/bin/tilec
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tilec="${1:-${TILEC:-$root/build/bin/tilec}}"
build="$(cd "$(dirname "$tilec")/.." && pwd)"
# bench/runtime.sh builds libtilert on the GPU machine with this header (its
# image has no libdlpack-dev); bench/prepare.sh has copied it already
mkdir -p "$root/.devcarry/include/dlpack"
cp /usr/include/dlpack/dlpack.h "$root/.devcarry/include/dlpack/"
python3 "$root/bench/validate_report.py" --prepare "$tilec"
TILEC_LIB_DIR="$build/lib:$build/runtime" PYTHONPATH="$root/python" python3 "$root/bench/interp_check.py" --prepare
python3 "$root/bench/interp_check.py" --dry-run
