#!/usr/bin/env bash
# GPU machine: the checks of the compiler's report and line information and
# of the interpreter mode, in one call (bench/device.sh runs it after its
# benchmarks; alone it builds libtilert first). Needs .devcarry/validate/
# and .devcarry/interp/ from bench/validate_prepare.sh (bench/prepare.sh).
#   bench/validate.sh        results under $OUT (default ./bench-out)
# 1. bench/interp_check.py     every example on small shapes: the GPU's
#                              outputs against the interpreter's
# 2. bench/validate_report.py  every example once under one ncu process:
#                              occupancy, bank conflicts and the roofline's
#                              time against Nsight Compute (validate.txt,
#                              validate.json, validate_ncu.csv, validate.ncu-rep)
# 3. bench/lineinfo_check.py   a seeded out-of-bounds store: memcheck and
#                              ncu's source page name its .tile line
# 4. bench/charts.py           roofline.png, attention_tflops.png,
#                              gemm_tflops.png from what $OUT holds
# Exit status 1 when a check fails (each prints PASS / FAIL lines).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/bench-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
if [ -z "${TILEC_LIB_DIR:-}" ]; then
  # shellcheck source=bench/runtime.sh
  . "$root/bench/runtime.sh"     # libtilert; TILEC_LIB_DIR, PYTHONPATH
fi
status=0
t0=$(date +%s)
if [ -f "$root/.devcarry/interp/manifest.json" ]; then
  echo "== interpreter vs GPU: every example on small shapes (bench/interp_check.py)"
  python3 "$root/bench/interp_check.py" > "$out/interp.txt" 2>&1 || status=1
  grep -vE "^  ok " "$out/interp.txt" | tail -n 20
else
  echo "note: no .devcarry/interp (run bench/prepare.sh): no interpreter-vs-GPU check of the examples"
fi
if [ -d "$root/.devcarry/validate" ]; then
  echo "== the report against Nsight Compute, every example in one ncu run (bench/validate_report.py)"
  python3 "$root/bench/validate_report.py" --out "$out" > "$out/validate.txt" 2>&1 || status=1
  cat "$out/validate.txt"
  echo "== line information: a seeded out-of-bounds store (bench/lineinfo_check.py)"
  python3 "$root/bench/lineinfo_check.py" --out "$out" > "$out/lineinfo.txt" 2>&1 || status=1
  cat "$out/lineinfo.txt"
else
  echo "note: no .devcarry/validate (run bench/prepare.sh): no report-vs-ncu or line-information check"
fi
echo "== charts (bench/charts.py)"
python3 "$root/bench/charts.py" --out "$out" || status=1
echo "validation: $(( $(date +%s) - t0 )) s"
exit $status
