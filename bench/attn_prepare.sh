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
one() {  # dt arch d bm bn causal [tag NAME=VALUE... -DNAME=VALUE... | SRC=file]  (a tag names a variant;
         # NAME=VALUE: a pass option, `tilec --help`)
  local dt=$1 arch=$2 d=$3 bm=$4 bn=$5 c=$6 tag=${7:-} src="$root/examples/attention.tile"
  shift 6; [ $# -gt 0 ] && shift
  [ "$dt" = f16 ] && src="$out/attention_f16.tile"
  case "${1:-}" in SRC=*) src="${1#SRC=}"; shift ;; esac
  local popts=() defs=() a
  for a in "$@"; do case "$a" in -D*) defs+=("$a") ;; *) popts+=(--pass-option "$a") ;; esac; done
  local name="attn_${dt}_${arch}_d${d}_m${bm}_n${bn}_$([ "$c" = true ] && echo c || echo f)${tag:+_$tag}"
  local t0=$(date +%s%N)
  "$tilec" "$src" -arch="$arch" -DD="$d" -DBM="$bm" -DBN="$bn" -DCAUSAL="$c" "${defs[@]}" "${popts[@]}" \
    -o "$out/$name.ptx"
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  local regs=$(ptxas -arch="$arch" -v "$out/$name.ptx" -o /dev/null 2>&1 |
               grep -oE 'Used [0-9]+ registers|[0-9]+ bytes spill stores' | tr '\n' ' ')
  echo "$name | tilec ${ms} ms | $regs" | tee -a "$out/variants.txt"
}
# A tile as tilec.attention compiles it: its pass options
# (python/tilec/_attention.py pass_options()) and its file-name tag.
pick() {  # dt arch d bm bn causal so(true|false) [npb: blocks of a persistent grid]
  local tag po npb=${8:-0}
  read -r tag po < <(PYTHONPATH="$root/python" python3 -c '
import sys; from tilec import _attention as A
so, bm, arch, npb = sys.argv[1] == "true", int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
po = A.pass_options(bm, arch)
print(A.variant_tag(so, npb)[1:] or "-", " ".join("%s=%d" % kv for kv in sorted(po.items())))' \
    "$7" "$4" "$2" "$npb")
  [ "$tag" = - ] && tag=
  # shellcheck disable=SC2086
  one "$1" "$2" "$3" "$4" "$5" "$6" "$tag" $po $([ "$7" = true ] && echo -DSTAGE_O=true) \
    $([ "$npb" != 0 ] && echo -DNPB="$npb")
}
# Default tiles (python/tilec/_attention.py tiles(): 4 warps x 32 rows;
# D=64 BN=128; D=128 BN=64; sm_86 BN=64) for every dtype and arch, each
# also with O staged through shared memory (tag so, -DSTAGE_O=true:
# tilec.attention's pick for short key loops), then the other tile choices
# (bf16, sm_90a) and experiment variants (a tag and NAME=VALUE pass
# options, or SRC=file for another source; none at present: the record of
# those measured is in bench/RESULTS.md). bench/attn_bench.py checks and
# times every bf16 file it finds (sm_90a and sm_86 PTX).
for c in false true; do
  for dt in bf16 f16; do
    for so in false true; do      # O staged: tilec.attention's pick for short rows
      pick $dt sm_90a 64 128 128 $c $so
      pick $dt sm_90a 128 128 64 $c $so
    done
  done
  for dt in bf16 f16; do [ $c = true ] && pick $dt sm_90a 64 128 64 true false; done
  # D=128 without the mask from 2k: 256-row blocks, decoupled turns (tilec.attention's
  # pick on devices with 128 KB of shared memory per block; the sm_86 file for the H200)
  if [ $c = false ]; then
    for dt in bf16 f16; do pick $dt sm_90a 128 256 64 false true; done
    pick bf16 sm_86 128 256 64 false true
    # from 1k: the same tile as a persistent grid of one block per SM (the H200's 132)
    for dt in bf16 f16; do pick $dt sm_90a 128 256 64 false true 132; done
    pick bf16 sm_86 128 256 64 false true 132
  fi
  for so in false true; do
    pick bf16 sm_86 64 128 64 $c $so
    pick bf16 sm_86 64 128 128 $c $so    # the H200's tiles from sm_86 PTX (the timed portable path)
    pick bf16 sm_86 128 128 64 $c $so
  done
  [ $c = false ] && one bf16 sm_90a 64 128 64 false
  one bf16 sm_90a 64 64 64 $c
  one bf16 sm_90a 128 128 32 $c
  one bf16 sm_90a 128 64 64 $c
done

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
