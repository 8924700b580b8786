#!/usr/bin/env bash
# Where attention kernels' warps wait (Nsight Compute), in one GPU call:
# SDPA's flash backend, tilec's portable-path tile (bench/attn_ncu.py) and
# every .ptx (+ .meta) of the example's kernel in DIR, on one shape.
#   bench/attn_stalls.sh [DIR] [D N causal(yes|no)]   (default: no DIR, 128 4096 no)
# Writes each report as stalls_NAME.txt under $OUT (or ./bench-out) and
# prints bench/ncu_table.py's table: duration, warp instructions, and per
# stall reason warp-cycles per issued instruction (and their total). ncu
# runs the kernels at base clocks: compare columns, not TFLOP/s.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/bench-out}"
mkdir -p "$out"
dir=""
if [ $# -gt 0 ] && [ -d "$1" ]; then dir="$1"; shift; fi
d="${1:-128}" n="${2:-4096}" c="${3:-no}"
# shellcheck source=bench/runtime.sh
. "$root/bench/runtime.sh"     # libtilert; TILEC_LIB_DIR, PYTHONPATH
metrics="smsp__inst_executed.sum,gpu__time_duration.sum"
for r in selected wait math_pipe_throttle short_scoreboard long_scoreboard barrier not_selected \
         dispatch_stall no_instruction mio_throttle branch_resolving lg_throttle drain; do
  metrics="$metrics,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
whos=(flash tilec)
if [ -n "$dir" ]; then
  for f in "$dir"/*.ptx; do [ -e "$f" ] && whos+=("$f"); done
fi
cols=()
status=0
for w in "${whos[@]}"; do
  name="$(basename "$w" .ptx)"
  ncu --metrics "$metrics" -k regex:'attention|flash' --launch-skip 2 --launch-count 1 \
      python3 "$root/bench/attn_ncu.py" "$w" "$d" "$n" "$c" > "$out/stalls_$name.txt" 2>&1 || status=1
  cols+=("$name=$out/stalls_$name.txt")
done
echo "attention D=$d N=$n causal=$c (ncu, base clocks)"
python3 "$root/bench/ncu_table.py" "${cols[@]}" | tee "$out/stalls.md"
exit $status
