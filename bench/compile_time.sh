#!/usr/bin/env bash
# compile_time.sh - how long tilec takes to compile each example to PTX.
#
#   bench/compile_time.sh [TILEC] [N]     TILEC defaults to build/bin/tilec, N to 15
#
# Per example (its defaults, and the larger blocks bench/prepare.sh uses)
# and arch (ARCHS, default sm_90a; e.g. ARCHS="sm_86 sm_90a sm_100a"),
# the best of N runs of `tilec FILE -arch=ARCH --no-ptxas -o OUT`:
#   wall  the whole process, as a user waits for it (start, exit included)
#   tp    the --time-passes total (the compilation inside the process)
#   cpu   its CPU time on the compiling thread (less sensitive to the
#         neighbours; the target machines, and the second module of a split
#         compilation, are built on a second thread: not counted here)
# Best-of-N because the build machine is shared: its wall clock swings with
# its neighbours (`uptime` is printed first; compare runs made at a low load
# average). Goals (issue 31): SIMT examples < 20 ms, attention < 50 ms.
# With valgrind installed, CALLGRIND=1 adds the instructions executed per
# compilation (deterministic: what a change to the compiler costs or saves,
# whatever the machine's load), counted on a copy without debug info
# (valgrind 3.19 gives up on the DWARF 5 of a RelWithDebInfo build).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tilec="${1:-$root/build/bin/tilec}"
n="${2:-15}"
ex="$root/examples"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

now_ns() { date +%s%N; }

cg_tilec="$tilec"
if [ "${CALLGRIND:-0}" = 1 ]; then
  objcopy --strip-debug "$tilec" "$out/tilec-nodebug"
  cg_tilec="$out/tilec-nodebug"
fi

echo "tilec: $("$tilec" --version | head -1)"
echo "load: $(uptime | sed 's/.*load average: //')"
printf '%-32s %-8s %9s %9s %9s' "example" "arch" "wall ms" "tp ms" "cpu ms"
[ "${CALLGRIND:-0}" = 1 ] && printf ' %12s' "instr (M)"
printf '\n'
for spec in "vector_add" "reduction" "transpose" "softmax" "layernorm" \
            "softmax -DBLOCK=4096" "softmax -DBLOCK=16384" \
            "layernorm -DBLOCK=4096" "layernorm -DBLOCK=16384" "gemm" "attention"; do
 for arch in ${ARCHS:-sm_90a}; do
  set -- $spec
  file="$ex/$1.tile"
  shift
  best_wall=
  best_tp=
  best_cpu=
  for i in $(seq "$n"); do
    t0=$(now_ns)
    "$tilec" "$file" -arch=$arch "$@" --no-ptxas -o "$out/x.ptx"
    t1=$(now_ns)
    wall=$(( (t1 - t0) / 1000 ))
    read -r tp cpu < <("$tilec" "$file" -arch=$arch "$@" --no-ptxas --time-passes -o "$out/x.ptx" 2>&1 |
         awk '/ total$/ {print $1, $2}')
    best_wall=$(( ${best_wall:-$wall} < wall ? ${best_wall:-$wall} : wall ))
    best_tp=$(echo "$tp ${best_tp:-$tp}" | awk '{print ($1 < $2) ? $1 : $2}')
    best_cpu=$(echo "$cpu ${best_cpu:-$cpu}" | awk '{print ($1 < $2) ? $1 : $2}')
  done
  printf '%-32s %-8s %9.1f %9.1f %9.1f' "$spec" "$arch" "$(echo "$best_wall" | awk '{print $1 / 1000}')" "$best_tp" "$best_cpu"
  if [ "${CALLGRIND:-0}" = 1 ]; then
    ir=$(valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" "$cg_tilec" "$file" -arch=$arch "$@" \
         --no-ptxas -o "$out/x.ptx" 2>&1 | awk '/Collected/ {print $4}')
    printf ' %12.1f' "$(echo "$ir" | awk '{print $1 / 1e6}')"
  fi
  printf '\n'
 done
done
