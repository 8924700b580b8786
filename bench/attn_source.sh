#!/usr/bin/env bash
# Where one attention kernel's warps wait, instruction by instruction
# (Nsight Compute's source counters: PC sampling of warp stalls), in one
# GPU call:
#   bench/attn_source.sh FILE.ptx [D N causal(yes|no)]   (default 128 1024 no)
# Writes NAME.ncu-rep and NAME_sass.csv (the source page: each SASS
# instruction with its samples by stall reason) under $OUT (or
# ./bench-out), and prints bench/sass_hot.py's summary of the CSV.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/bench-out}"
mkdir -p "$out"
ptx="$1"; shift
d="${1:-128}" n="${2:-1024}" c="${3:-no}"
# shellcheck source=bench/runtime.sh
. "$root/bench/runtime.sh"     # libtilert; TILEC_LIB_DIR, PYTHONPATH
name="$(basename "$ptx" .ptx)_${n}"
ncu --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    -k regex:'attention' --launch-skip 2 --launch-count 1 -f -o "$out/$name" \
    python3 "$root/bench/attn_ncu.py" "$ptx" "$d" "$n" "$c" > "$out/${name}_ncu.txt" 2>&1 || { tail -20 "$out/${name}_ncu.txt"; exit 1; }
ncu --import "$out/$name.ncu-rep" --page source --csv --print-source sass > "$out/${name}_sass.csv" 2> "$out/${name}_sass.err" \
  || { cat "$out/${name}_sass.err"; exit 1; }
ncu --import "$out/$name.ncu-rep" --page details > "$out/${name}_details.txt" 2>&1
python3 "$root/bench/sass_hot.py" "$out/${name}_sass.csv" | tee "$out/${name}_hot.txt"
