#!/usr/bin/env bash
# The compiler reads no setting from outside a compilation's options: no
# getenv in the front end, the IR, the passes, the targets or the code
# generator, and none of the former TILEC_* code-generation switch names
# (docs/codegen.md, "Switches") anywhere in them. The library around them
# (driver/: the API, the report; lib/: the cache, utilities) reads no
# environment either: the host settings (the ptxas, the cache folder) come
# through tilec_options, and the tilec command (tools/) and the Python
# package look them up. There the one use of `environ` allowed is handing
# the process's environment to the ptxas it starts (driver/report.c).
# Exit 1 with the places found.
set -u
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
dirs=("$root/frontend" "$root/ir" "$root/passes" "$root/codegen" "$root/target")
for d in "${dirs[@]}"; do
  [ -d "$d" ] || { echo "no_switches: missing folder $d"; exit 1; }
done
names='TILEC_(XP_[A-Z_]+|COPY_INTERIOR|DEAD_TAIL|EPILOGUE_OVER|EXACT_HOT|EXACT_STORE|EXACT_TAIL|FRESH_IDS|GVN|HOIST|IOTA_CMP|L1HINT|L2_PREFETCH|MINCTASM|OVERLAP_SINGLE|PF_LATE|PINGPONG|PV_ROWS|REMAT|ROLL_K|ROTATE|ROW_ADDRESSES|ROW_STEP|SCHED|SINK_FAR|SMEM_LIMIT|UNROLL_TAIL|VERIFY_LLVM|WARPS|WHERE_BRANCH|WORDMASK|MASK_MODE|LLVM_SKIP|LLVM_ARGS|LLVM_TRACE)\b'
found=$(grep -rnE "getenv|secure_getenv|environ\b|$names|tc_knob" "${dirs[@]}" 2>/dev/null)
host=("$root/driver" "$root/lib")
for d in "${host[@]}"; do
  [ -d "$d" ] || { echo "no_switches: missing folder $d"; exit 1; }
done
found+=$(grep -rnE "getenv|secure_getenv|getpw(nam|uid)|environ\b|$names|tc_knob" "${host[@]}" 2>/dev/null |
         grep -vE "^$root/driver/report.c:[0-9]+:(extern char \*\*environ;|.*posix_spawn\(.*, environ\);)")
if [ -n "$found" ]; then
  echo "no_switches: settings read from outside the options:"
  echo "$found"
  exit 1
fi
echo "no_switches: no getenv and no switch names in $((${#dirs[@]} + ${#host[@]})) folders"
