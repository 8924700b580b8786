#!/usr/bin/env bash
# Build machine, before bench/attn_bench.py runs on the GPU machine: compiles
# the attention variants to PTX + metadata under .devcarry/attn/ (f16 from a
# copy of the example with its dtype replaced), checks each with ptxas and
# records registers, spills and compile times in .devcarry/attn/variants.txt.
#   bench/attn_prepare.sh [TILEC]          TILEC defaults to build/bin/tilec
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tilec="${1:-${TILEC:-$root/build/bin/tilec}}"
out="$root/.devcarry/attn"
rm -rf "$out"; mkdir -p "$out"
sed 's/bf16/f16/g' "$root/examples/attention.tile" > "$out/attention_f16.tile"
: > "$out/variants.txt"
one() {  # dt arch d bm bn causal [tag NAME=VALUE... -DNAME=VALUE... --dim=N=V,... | SRC=file]  (a tag names a
         # variant; NAME=VALUE: a pass option, `tilec --help`; --dim=: sizes the compiler is told, as
         # tilec.attention tells them; the name keeps the old tile-file layout)
  local dt=$1 arch=$2 d=$3 bm=$4 bn=$5 c=$6 tag=${7:-} src="$root/examples/attention.tile"
  shift 6; [ $# -gt 0 ] && shift
  [ "$dt" = f16 ] && src="$out/attention_f16.tile"
  case "${1:-}" in SRC=*) src="${1#SRC=}"; shift ;; esac
  local popts=() defs=() a
  for a in "$@"; do case "$a" in -D*) defs+=("$a") ;; --dim=*) defs+=(--dim "${a#--dim=}") ;;
                                  *) popts+=(--pass-option "$a") ;; esac; done
  local name="attn_${dt}_${arch}_d${d}_m${bm}_n${bn}_$([ "$c" = true ] && echo c || echo f)${tag:+_$tag}"
  local t0=$(date +%s%N)
  "$tilec" "$src" -arch="$arch" -DD="$d" -DBM="$bm" -DBN="$bn" -DCAUSAL="$c" "${defs[@]}" "${popts[@]}" \
    -o "$out/$name.ptx"
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  local regs=$(ptxas -arch="$arch" -v "$out/$name.ptx" -o /dev/null 2>&1 |
               grep -oE 'Used [0-9]+ registers|[0-9]+ bytes spill stores' | tr '\n' ' ')
  echo "$name | tilec ${ms} ms | $regs" | tee -a "$out/variants.txt"
}
# Tiles pinned with -DBM / -DBN (bench/attn_bench.py checks and times
# every bf16 file of this folder, sm_90a and sm_86 PTX), then the kernels
# tilec.attention compiles for the H200 (132 SMs, 227 KB a block) on the
# timed grid, in lib/: the plain example with the query and key lengths
# (--dim) and the device's facts (pass options), named by
# python/tilec/_attention.py variant_name(); the compiler chooses the rest.
for c in false true; do
  for dt in bf16 f16; do
    one $dt sm_90a 64 128 128 $c
    one $dt sm_90a 128 128 64 $c
  done
  one bf16 sm_86 64 128 64 $c
  one bf16 sm_86 128 128 64 $c
  [ $c = false ] && one bf16 sm_90a 64 128 64 false
  one bf16 sm_90a 64 64 64 $c
  one bf16 sm_90a 64 192 128 $c   # three consumer warp groups (FlashAttention 3's D = 64 tile)
  one bf16 sm_90a 128 128 32 $c
  # head dims 96 and 256 on the fast path (checked, not timed)
  for dt in bf16 f16; do
    one $dt sm_90a 96 128 64 $c
    one $dt sm_90a 256 128 64 $c
  done
  # the tcgen05 path (a B200 runs these; bench/attn_bench.py leaves them out elsewhere)
  for dt in bf16 f16; do
    one $dt sm_100a 64 128 128 $c
    one $dt sm_100a 128 128 64 $c
  done
done
# D = 128 at 1024 tokens without the mask, the portable path's slowest row
# against flash: tilec.attention's pick there (256 x 64, two warp groups in
# turns, persistent) beside its neighbours, told the same sizes and device
# facts: 32 key columns a block, one tile a block (no SM count), 128 rows.
h200=(target.sms=132 target.smem-per-block=232448)
one bf16 sm_86 128 256 32 false n1k --dim=N=1024,NK=1024 "${h200[@]}"
one bf16 sm_86 128 256 64 false n1knp --dim=N=1024,NK=1024 target.smem-per-block=232448
one bf16 sm_86 128 128 64 false n1k --dim=N=1024,NK=1024 "${h200[@]}"
mkdir -p "$out/lib"
lib() {  # dt arch d causal n [bm bn: pins]
  local name args
  read -r name args < <(PYTHONPATH="$root/python" python3 -c '
import sys; from tilec import _attention as A
dt, arch, d, c, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "true", int(sys.argv[5])
bm, bn = (int(sys.argv[6]), int(sys.argv[7])) if len(sys.argv) > 7 else (None, None)
po, dims, consts = A.compile_args(d, c, n, None, 232448, 132, bm, bn)
args = ["--pass-option %s=%d" % kv for kv in sorted(po.items())] + ["--dim %s=%d" % kv for kv in sorted(dims.items())]
args += ["-D%s=%s" % (k, str(v).lower()) for k, v in consts.items()]
print(A.variant_name(dt, arch, d, c, n, None, bm, bn), " ".join(args))' "$@")
  local src="$root/examples/attention.tile" t0=$(date +%s%N)
  [ "$1" = f16 ] && src="$out/attention_f16.tile"
  # shellcheck disable=SC2086
  "$tilec" "$src" -arch="$2" $args --report="$out/lib/$name.report" -o "$out/lib/$name.ptx"
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  local regs=$(ptxas -arch="$2" -v "$out/lib/$name.ptx" -o /dev/null 2>&1 |
               grep -oE 'Used [0-9]+ registers|[0-9]+ bytes spill stores' | tr '\n' ' ')
  echo "lib/$name | tilec ${ms} ms | $regs | $(grep -o 'BM = [0-9]*; BN = [0-9]*' "$out/lib/$name.report")" |
    tee -a "$out/variants.txt"
}
for d in 64 128; do for c in false true; do for n in 1024 2048 4096 8192 16384; do
  lib bf16 sm_86 $d $c $n
done; done; done
# Short rows (130 and 200 tokens), tiles pinned: the boundary blocks and O
# staged through the dead K/V buffers (bench/sanitize.py runs every lib file).
for t in "64 64" "64 128" "128 64"; do for c in false true; do for n in 130 200; do
  set -- $t; lib bf16 sm_86 $1 $c $n 128 $2
done; done; done

# The interpreter's O and LSE for the define sets just compiled, on small
# cases, for bench/attn_interp_check.py (interpreter vs GPU) on the device:
# .devcarry/attn_interp/ (attn_interp_ref is built next to tilec).
ref="$(cd "$(dirname "$tilec")" && pwd)/attn_interp_ref"
rm -rf "$root/.devcarry/attn_interp"
if [ -x "$ref" ]; then
  (cd "$root" && "$ref" examples/attention.tile .devcarry/attn .devcarry/attn_interp) > "$out/interp.txt" ||
    { cat "$out/interp.txt"; exit 1; }
  tail -n 1 "$out/interp.txt"
else
  echo "warning: no $ref (cmake --build BUILD --target attn_interp_ref): no interpreter-vs-GPU check" >&2
fi
