#!/usr/bin/env bash
# One call on the GPU machine: build the runtime, check correctness, time
# everything against the peers measured in the same run, print a table.
#
# Expects (carried from the build machine, see bench/prepare.sh):
#   .devcarry/libtilec.so   libtilec linked statically against LLVM (compiles
#                           .tile sources at run time, as a JIT host would)
# Writes full results under $OUT (or ./bench-out when OUT is unset).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/bench-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1

echo "== device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/device.txt"

echo "== build libtilert (runtime only: no LLVM on this host)"
cmake -S "$root" -B /tmp/tilert-build -DTILEC_COMPILER=OFF -DCMAKE_BUILD_TYPE=Release > "$out/cmake.log" 2>&1 &&
  cmake --build /tmp/tilert-build -j 16 >> "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }

export TILEC_LIB_DIR="$root/.devcarry:/tmp/tilert-build/runtime"
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
status=0

echo "== C host tests (libtilert from C, PTX compiled by tilec)"
if [ -x /tmp/tilert-build/tests/gpu/gpu_tests ]; then
  /tmp/tilert-build/tests/gpu/gpu_tests "$root" 2>&1 | tee "$out/c_tests.txt" || status=1
fi

echo "== Python correctness + benchmark"
python3 "$root/bench/bench.py" --out "$out" "$@" 2>&1 | tee "$out/bench.txt" || status=1
exit $status
