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
one() {  # dt arch d bm bn causal
  local dt=$1 arch=$2 d=$3 bm=$4 bn=$5 c=$6 src="$root/examples/attention.tile"
  [ "$dt" = f16 ] && src="$out/attention_f16.tile"
  local name="attn_${dt}_${arch}_d${d}_m${bm}_n${bn}_$([ "$c" = true ] && echo c || echo f)"
  local t0=$(date +%s%N)
  "$tilec" "$src" -arch="$arch" -DD="$d" -DBM="$bm" -DBN="$bn" -DCAUSAL="$c" -o "$out/$name.ptx"
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  local regs=$(ptxas -arch="$arch" -v "$out/$name.ptx" -o /dev/null 2>&1 |
               grep -oE 'Used [0-9]+ registers|[0-9]+ bytes spill stores' | tr '\n' ' ')
  echo "$name | tilec ${ms} ms | $regs" | tee -a "$out/variants.txt"
}
# Default tiles per D (python/tilec/_attention.py TILES) for every dtype and
# arch; the other tile choice (bf16, sm_90a) for the benchmark.
for d in 64 128; do
  bn=$([ $d = 64 ] && echo 64 || echo 128); other=$([ $d = 64 ] && echo 128 || echo 64)
  for c in false true; do
    for dt in bf16 f16; do one $dt sm_90a $d 128 $bn $c; done
    one bf16 sm_86 $d 128 64 $c      # 99 KB of shared memory: BN = 64
    one bf16 sm_90a $d 128 $other $c
  done
done
