#!/usr/bin/env bash
# Run on the build machine before bench/device.sh: compiles every kernel the
# device run needs to PTX + metadata under .devcarry/ (gitignored), so that
# the GPU machine needs no LLVM, only libtilert (built there by device.sh).
#
#   bench/prepare.sh [TILEC]        TILEC defaults to build/bin/tilec
#
# Layout:  .devcarry/include/dlpack/dlpack.h             for libtilert's build there
#          .devcarry/kernels/<arch>/<name>.ptx + .meta   correctness kernels
#          .devcarry/perf/<name>.ptx + .meta              benchmark kernels
#          .devcarry/perf/variants.txt                    what each variant is
#          .devcarry/gemm_f8/                             f8e4m3 GEMMs (bench/gemm_f8_bench.py)
#          .devcarry/compile_times.txt                    --time-passes totals
#          .devcarry/attn_interp/                         the interpreter's attention outputs on
#                                                         small cases (bench/attn_prepare.sh writes them)
#          .devcarry/validate/, .devcarry/interp/         the report-vs-ncu, line-information and
#                                                         interpreter checks (bench/validate_prepare.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tilec="${1:-${TILEC:-$root/build/bin/tilec}}"
out="$root/.devcarry"
rm -rf "$out/kernels" "$out/perf" "$out/include"
mkdir -p "$out/perf"
ex="$root/examples"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The GPU image has no DLPack header: carry the build machine's.
mkdir -p "$out/include/dlpack"
cp /usr/include/dlpack/dlpack.h "$out/include/dlpack/"

pow2() { local n=$1 p=1; while [ $p -lt $n ]; do p=$((p * 2)); done; echo $p; }

# compile DIR NAME FILE ARCH [DEFINES...]
compile() {
  local dir=$1 name=$2 file=$3 arch=$4; shift 4
  mkdir -p "$dir"
  "$tilec" "$file" -arch="$arch" "$@" -o "$dir/$name.ptx"
}

for arch in sm_90a sm_86; do
  d="$out/kernels/$arch"
  compile "$d" vector_add "$ex/vector_add.tile" $arch
  compile "$d" reduction "$ex/reduction.tile" $arch
  for t in bf16 f32; do compile "$d" transpose_$t "$ex/transpose.tile" $arch -DT=$t; done
  for t in bf16 f16 f32; do
    for cols in 1 127 1000 4096 4097; do
      b=$(pow2 $cols)
      compile "$d" softmax_${t}_$b "$ex/softmax.tile" $arch -DT=$t -DBLOCK=$b
      compile "$d" layernorm_${t}_$b "$ex/layernorm.tile" $arch -DT=$t -DBLOCK=$b
    done
  done
  # rmsnorm, cross_entropy (128k vocabulary) and layernorm_bwd: bench.py's checks
  compile "$d" rmsnorm_bf16_4096 "$ex/rmsnorm.tile" $arch -DBLOCK=4096
  compile "$d" rmsnorm_f32_1024 "$ex/rmsnorm.tile" $arch -DT=f32 -DBLOCK=1024
  compile "$d" cross_entropy "$ex/cross_entropy.tile" $arch
  compile "$d" layernorm_bwd_bf16_1024 "$ex/layernorm_bwd.tile" $arch -DBLOCK=1024
  compile "$d" layernorm_bwd_bf16_4096 "$ex/layernorm_bwd.tile" $arch -DBLOCK=4096
  compile "$d" layernorm_bwd_f32_1024 "$ex/layernorm_bwd.tile" $arch -DT=f32 -DBLOCK=1024
  compile "$d" decode_attention "$ex/decode_attention.tile" $arch
done

# Benchmark kernels: the defaults, plus variants given as "NAME|OPTIONS|DEFINES"
# (OPTIONS: tilec options such as --pass-option NAME=VALUE, may be empty),
# then $PERF_VARIANTS. bench.py takes a variant's kind (and so its shape and
# torch peer) from its name's prefix: softmax_, layernorm_, rmsnorm_ (rows
# of the BLOCK in the name), cross_entropy_ (4096 x 128256 bf16 logits),
# layernorm_bwd_ (32768 x 4096 bf16), cumsum (16384 x 8192 f32), dropout_
# (2^28 elements, f32 or bf16 by the name), gather_rows / scatter_rows
# (2^20 rows of 256 bf16 by 2^20 indices; the module has both kernels).
p="$out/perf"
: > "$p/variants.txt"
while IFS='|' read -r name envs defs; do
  [ -z "$name" ] && continue
  "$tilec" $defs $envs -arch=sm_90a -o "$p/$name.ptx"
  regs=$(command -v ptxas >/dev/null && ptxas -arch=sm_90a -v "$p/$name.ptx" -o /dev/null 2>&1 |
         grep -oE 'Used [0-9]+ registers|[0-9]+ bytes spill stores' | tr '\n' ' ' || true)
  echo "$name|$envs|$defs|$regs" >> "$p/variants.txt"
done <<VARIANTS
softmax_4096||$ex/softmax.tile -DBLOCK=4096
softmax_16384||$ex/softmax.tile -DBLOCK=16384
layernorm_4096||$ex/layernorm.tile -DBLOCK=4096
layernorm_16384||$ex/layernorm.tile -DBLOCK=16384
rmsnorm_4096||$ex/rmsnorm.tile -DBLOCK=4096
rmsnorm_16384||$ex/rmsnorm.tile -DBLOCK=16384
cross_entropy_bn8192||$ex/cross_entropy.tile -DBN=8192
cross_entropy_bn4096||$ex/cross_entropy.tile -DBN=4096
cross_entropy_bn16384||$ex/cross_entropy.tile -DBN=16384
cross_entropy_plain||$root/tests/perf/cross_entropy_plain.tile -DBN=8192
layernorm_bwd_4096||$ex/layernorm_bwd.tile -DBLOCK=4096
layernorm_bwd_4096_g16||$ex/layernorm_bwd.tile -DBLOCK=4096 -DG=16
layernorm_bwd_4096_g64||$ex/layernorm_bwd.tile -DBLOCK=4096 -DG=64
layernorm_bwd_4096_r2g64||$ex/layernorm_bwd.tile -DBLOCK=4096 -DR=2 -DG=64
layernorm_bwd_4096_r1g128||$ex/layernorm_bwd.tile -DBLOCK=4096 -DR=1 -DG=128
layernorm_bwd_4096_ahead_r1g128||$root/tests/perf/layernorm_bwd_ahead.tile -DBLOCK=4096 -DR=1 -DG=128
layernorm_bwd_4096_ahead_r2g64||$root/tests/perf/layernorm_bwd_ahead.tile -DBLOCK=4096 -DR=2 -DG=64
layernorm_bwd_4096_staged_r2g64s4||$root/tests/perf/layernorm_bwd_staged.tile -DBLOCK=4096 -DR=2 -DG=64 -DS=4
layernorm_bwd_4096_staged_r2g125s4||$root/tests/perf/layernorm_bwd_staged.tile -DBLOCK=4096 -DR=2 -DG=125 -DS=4
layernorm_bwd_4096_staged_r2g125s3||$root/tests/perf/layernorm_bwd_staged.tile -DBLOCK=4096 -DR=2 -DG=125 -DS=3
layernorm_bwd_4096_staged_r4g63s2||$root/tests/perf/layernorm_bwd_staged.tile -DBLOCK=4096 -DR=4 -DG=63 -DS=2
layernorm_bwd_4096_persistent_r2s3||$root/tests/perf/layernorm_bwd_persistent.tile -DBLOCK=4096 -DR=2 -DS=3
layernorm_bwd_4096_persistent_r4s2||$root/tests/perf/layernorm_bwd_persistent.tile -DBLOCK=4096 -DR=4 -DS=2
cumsum||$ex/cumsum.tile
dropout_f32||$ex/dropout.tile -DT=f32
dropout_bf16||$ex/dropout.tile -DT=bf16
gather_rows||$ex/gather_rows.tile
scatter_rows||$ex/gather_rows.tile
${PERF_VARIANTS:-}
VARIANTS

# Decode attention (bench.py's bench_decode_attention: pages of 64, its
# defaults), outside the variants above (its shape and peer are its own).
"$tilec" "$ex/decode_attention.tile" -arch=sm_90a -o "$p/decode_attention.ptx"

# Compile time per example (best of 15 --time-passes totals: the 2-core
# build machine's wall clock swings with its neighbours; vector_add first
# as the calibration).
# To PTX (--no-ptxas: the check by ptxas that a compilation runs where the
# toolkit is installed took ~20 ms of vector_add's 23 and most of
# attention's). The load average before and after goes with them: figures
# taken beside other work are not the compiler's.
echo "build machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) before" > "$out/compile_times.txt"
for spec in "vector_add" "reduction" "transpose" "softmax -DBLOCK=4096" "softmax -DBLOCK=16384" \
            "layernorm -DBLOCK=4096" "layernorm -DBLOCK=16384" "rmsnorm -DBLOCK=4096" "cross_entropy" \
            "layernorm_bwd -DBLOCK=4096" "attention -arch=sm_100a"; do
  set -- $spec
  best=
  for i in $(seq 15); do
    t=$("$tilec" "$ex/$1.tile" -arch=sm_90a ${2:-} --no-ptxas --time-passes -o "$tmp/t.ptx" 2>&1 | awk '/ total$/{print $1}')
    best=$(echo "$t ${best:-$t}" | awk '{print ($1 < $2) ? $1 : $2}')
  done
  echo "$spec: $best ms" >> "$out/compile_times.txt"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/compile_times.txt"
cat "$out/compile_times.txt"
cat "$p/variants.txt"

# The C-host GPU tests (tests/gpu/gpu_kernels, gpu_atomic, gpu_rand_scan,
# gpu_gather_shape and gpu_norm_loss: make_ptx.sh), the GEMM variants and the
# attention variants (and the interpreter's outputs for them, .devcarry/attn_interp),
# so that bench/device.sh runs everything in one call.
build="$(cd "$(dirname "$tilec")/.." && pwd)"
rm -rf "$out/gputest"
"$root/tests/gpu/make_ptx.sh" "$build" "$out/gputest" sm_90a sm_86
python3 "$root/bench/gemm_bench.py" --prepare "$tilec"
python3 "$root/bench/gemm_f8_bench.py" --prepare "$tilec"
# The attention example for sm_90a (warp-specialized roles), launched by
# bench/sm90_probe.py on the GPU machine; told the H200's 132 SMs, as
# tilec.compile and tilec.attention tell the compiler the GPU's (a
# persistent grid where the compiler takes one).
rm -rf "$out/wsa"; mkdir -p "$out/wsa"
for d in 64 128; do for c in false true; do
  "$tilec" "$ex/attention.tile" -arch=sm_90a -DD=$d -DCAUSAL=$c --pass-option target.sms=132 \
    -o "$out/wsa/attn_d${d}_$c.ptx"
done; done
# The sm_90a attention as the compiler picks it without the sizes (128 x
# 128 tiles, 192 x 128 at D = 64 without the mask: the files keep the
# m128_n128 name bench/pallas_peer.py reads; the lazy maximum from D =
# 128, exp2 on the MUFU), bf16 and f16: bench/
# device.sh checks every file on the attention correctness matrix and
# times the bf16 ones with bench/attn_bench.py; bench/pallas_peer.py sets
# the f16 ones beside JAX Pallas. (FlashAttention 4's exp2 emulation and
# the lazy maximum flipped, forced by pass options, are no longer timed
# each run: on the H200 the emulation ran up to 14% slower, +2% on one row
# of twelve, the flipped maximum -6% to +3%, bench/RESULTS.md 2026-12-03
# 19:14; the exp2_emu pass turns the emulation on only where the
# accumulators live in tensor memory.)
rm -rf "$out/fa4"; mkdir -p "$out/fa4"
sed 's/bf16/f16/g' "$ex/attention.tile" > "$out/fa4/attention_f16.tile"
for dt in bf16 f16; do for d in 64 128; do for c in false true; do
  src="$ex/attention.tile"; [ $dt = f16 ] && src="$out/fa4/attention_f16.tile"
  "$tilec" "$src" -arch=sm_90a -DD=$d -DCAUSAL=$c --pass-option target.sms=132 \
    -o "$out/fa4/attn_${dt}_sm_90a_d${d}_m128_n128_$([ $c = true ] && echo c || echo f).ptx"
done; done
  # D = 64 causal told at most 4096 keys: the compiler's 64 x 64 tiles at
  # three blocks an SM (checked on the whole matrix, timed on every causal
  # D = 64 row beside the default)
  "$tilec" "$src" -arch=sm_90a -DD=64 -DCAUSAL=true --dim N=4096,NK=4096 --pass-option target.sms=132 \
    -o "$out/fa4/attn_${dt}_sm_90a_d64_m64_n64_c.ptx"
done
rm -f "$out/fa4/attention_f16.tile"
python3 "$root/bench/perf_plain.py" --prepare "$tilec"
"$root/bench/attn_prepare.sh" "$tilec"
"$root/bench/launch_prepare.sh" "$tilec"
TILEC_LIB_DIR="$build/lib" python3 "$root/bench/autotune.py" --prepare
# The GPU-side checks of the report, the line information and the
# interpreter mode (bench/validate.sh, which bench/device.sh runs last).
"$root/bench/validate_prepare.sh" "$tilec"
