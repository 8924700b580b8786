#!/usr/bin/env bash
# One GPU call for a folder of attention experiment variants (PTX + .meta
# compiled on the build machine, carried with the call): builds libtilert,
# checks every variant against the float32 reference, times each beside
# SDPA's flash and cuDNN backends (bench/attn_bench.py --variants-only), then
# reads the SM clock and power under each (bench/power_probe.py --variants).
#   bench/attn_xp.sh DIR [attn_bench.py options]
#   REPEAT=R (default 3) rounds per row; NS=... (default 1024,4096,16384);
#   DIMS=... (default 128); PROBE=0 skips the clock/power probe, PROBE_ROWS="D N
#   causal(yes|no) ..." gives its rows (default: power_probe.py's).
# Writes attn_xp.txt (and power.txt) under $OUT (or ./bench-out).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:?usage: bench/attn_xp.sh DIR [attn_bench.py options]}"; shift
out="${OUT:-$root/bench-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# shellcheck source=bench/runtime.sh
. "$root/bench/runtime.sh"     # libtilert; TILEC_LIB_DIR, PYTHONPATH
status=0
python3 "$root/bench/attn_bench.py" --dir "$dir" --variants-only --repeat "${REPEAT:-3}" \
  --dims "${DIMS:-128}" --ns "${NS:-1024,4096,16384}" "$@" 2>&1 | tee "$out/attn_xp.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
if [ "${PROBE:-1}" != 0 ]; then
  # shellcheck disable=SC2086
  python3 "$root/bench/power_probe.py" --variants "$dir" ${PROBE_ROWS:-} 2>&1 | tee "$out/power.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
exit $status
