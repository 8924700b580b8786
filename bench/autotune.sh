#!/usr/bin/env bash
# GPU machine: autotuning end to end on the candidates precompiled on the
# build machine (python3 bench/autotune.py --prepare writes .devcarry/tune/
# and .devcarry/include/; carry both): builds libtilert alone
# (bench/runtime.sh), runs the C test of the runtime's tuner (gpu_tune on
# .devcarry/tune/gputest), the Python test (tests/gpu/test_tune_torch.py on
# .devcarry/tune), then bench/autotune.py (tilec's autotune time and pick
# beside Triton's autotune, same run). Results under $OUT (default
# ./bench-out): gpu_tune.txt, tune_python.txt, autotune.txt, autotune.json.
#   bench/autotune.sh [bench/autotune.py options: --rounds R, --no-triton]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/bench-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
[ -d "$root/.devcarry/tune" ] || { echo "no .devcarry/tune: run python3 bench/autotune.py --prepare on the build machine"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$out/device.txt"
# shellcheck source=bench/runtime.sh
. "$root/bench/runtime.sh"     # libtilert in $rt; TILEC_LIB_DIR, PYTHONPATH
status=0
echo "== gpu_tune (C: tilert_tune)"
"$rt/tests/gpu/gpu_tune" "$root/.devcarry/tune/gputest" > "$out/gpu_tune.txt" 2>&1 || status=1
grep -E "FAIL|error|kept|wins|passed, " "$out/gpu_tune.txt" | tail -n 12
echo "== tests/gpu/test_tune_torch.py (Python: tilec.Tuned)"
python3 "$root/tests/gpu/test_tune_torch.py" "$root/.devcarry/tune" > "$out/tune_python.txt" 2>&1 || status=1
grep -E "FAIL|Error|gemm M|failure|all passed" "$out/tune_python.txt" | tail -n 12
echo "== bench/autotune.py"
python3 "$root/bench/autotune.py" --json "$out/autotune.json" "$@" 2>&1 | tee "$out/autotune.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
exit $status
