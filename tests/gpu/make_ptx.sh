#!/bin/sh
# make_ptx.sh - compile every kernel configuration that gpu_kernels tests
# into OUTDIR/ARCH/<kernel>_<config>.ptx + .meta, so that a GPU host without
# tilec (a runtime-only build) can run the test from them:
#
#   tests/gpu/make_ptx.sh BUILD_DIR OUTDIR [ARCH ...]    (default: sm_86 sm_90a)
#   gpu_kernels OUTDIR          (or TILEC_PTX_DIR=OUTDIR gpu_kernels)
#   gpu_atomic OUTDIR           (its kernels: OUTDIR/ARCH/atomic.ptx)
#   gpu_rand_scan OUTDIR        (OUTDIR/ARCH/rand_scan.ptx, dropout_*.ptx, cumsum.ptx)
#   gpu_gather_shape OUTDIR     (OUTDIR/ARCH/gather_shape.ptx, gather_rows.ptx)
#   gpu_norm_loss OUTDIR        (OUTDIR/ARCH/<module>.ptx: rmsnorm, cross_entropy and
#                               layernorm_bwd as its --list-modules names them)
#   gpu_decode OUTDIR           (OUTDIR/ARCH/<module>.ptx: decode_attention with its
#                               defines, as its --list-modules names them)
#   gpu_tune OUTDIR             (OUTDIR/sm_86/tune.ptx, OUTDIR/ARCH/gemm_cand_I.ptx)
#   gpu_products OUTDIR         (OUTDIR/ARCH/products.ptx, gemm_f8e4m3.ptx, gemm_f32.ptx, gemm_tf32.ptx)
#   gpu_math OUTDIR             (OUTDIR/ARCH/math.ptx: every math builtin on f32, bf16, f16)
#
# BUILD_DIR is a full build: it holds bin/tilec (or set $TILEC) and
# tests/gpu/gpu_kernels, whose --list-configs gives the configurations.
set -eu
if [ $# -lt 2 ]; then
    echo "usage: $0 BUILD_DIR OUTDIR [ARCH ...]" >&2
    exit 2
fi
build=$1
out=$2
shift 2
[ $# -gt 0 ] || set -- sm_86 sm_90a
tilec=${TILEC:-$build/bin/tilec}
src=$(cd "$(dirname "$0")/../.." && pwd)
configs=$("$build/tests/gpu/gpu_kernels" --list-configs)
for arch in "$@"; do
    mkdir -p "$out/$arch"
    echo "$configs" | while read -r name tile defs; do
        # $defs is a list of -DNAME=VALUE words: split on purpose.
        # shellcheck disable=SC2086
        "$tilec" "$src/examples/$tile.tile" -arch="$arch" $defs -o "$out/$arch/$name.ptx"
    done
    # gpu_atomic's kernels (atomic_add), from its own source.
    if [ -x "$build/tests/gpu/gpu_atomic" ]; then
        "$build/tests/gpu/gpu_atomic" --print-source > "$out/$arch/atomic.tile"
        "$tilec" "$out/$arch/atomic.tile" -arch="$arch" -o "$out/$arch/atomic.ptx"
    fi
    # gpu_rand_scan's modules: its own kernels and the dropout and cumsum examples.
    if [ -x "$build/tests/gpu/gpu_rand_scan" ]; then
        "$build/tests/gpu/gpu_rand_scan" --print-source > "$out/$arch/rand_scan.tile"
        "$tilec" "$out/$arch/rand_scan.tile" -arch="$arch" -o "$out/$arch/rand_scan.ptx"
        "$tilec" "$src/examples/dropout.tile" -arch="$arch" -o "$out/$arch/dropout_f32.ptx"
        "$tilec" "$src/examples/dropout.tile" -arch="$arch" -DT=bf16 -o "$out/$arch/dropout_bf16.ptx"
        "$tilec" "$src/examples/cumsum.tile" -arch="$arch" -DBN=256 -o "$out/$arch/cumsum.ptx"
    fi
    # gpu_gather_shape's modules: its own kernels and the gather_rows example.
    if [ -x "$build/tests/gpu/gpu_gather_shape" ]; then
        "$build/tests/gpu/gpu_gather_shape" --print-source > "$out/$arch/gather_shape.tile"
        "$tilec" "$out/$arch/gather_shape.tile" -arch="$arch" -o "$out/$arch/gather_shape.ptx"
        "$tilec" "$src/examples/gather_rows.tile" -arch="$arch" -o "$out/$arch/gather_rows.ptx"
    fi
    # gpu_norm_loss's modules: examples with defines ("NAME EXAMPLE DEFINES...").
    if [ -x "$build/tests/gpu/gpu_norm_loss" ]; then
        "$build/tests/gpu/gpu_norm_loss" --list-modules | while read -r name tile defs; do
            # shellcheck disable=SC2086
            "$tilec" "$src/examples/$tile.tile" -arch="$arch" $defs -o "$out/$arch/$name.ptx"
        done
    fi
    # gpu_decode's modules: examples/decode_attention.tile with defines.
    if [ -x "$build/tests/gpu/gpu_decode" ]; then
        "$build/tests/gpu/gpu_decode" --list-modules | while read -r name tile defs; do
            # shellcheck disable=SC2086
            "$tilec" "$src/examples/$tile.tile" -arch="$arch" $defs -o "$out/$arch/$name.ptx"
        done
    fi
    # gpu_tune's modules: its Z = X kernels and examples/gemm.tile's candidates.
    if [ -x "$build/tests/gpu/gpu_tune" ]; then
        "$build/tests/gpu/gpu_tune" --print-source > "$out/$arch/tune.tile"
        "$tilec" "$out/$arch/tune.tile" -arch="$arch" -o "$out/$arch/tune.ptx"
        for i in 0 1 2 3; do
            "$tilec" "$src/examples/gemm.tile" -arch="$arch" --pass-option tiles.candidate=$i \
                -o "$out/$arch/gemm_cand_$i.ptx"
        done
    fi
    # gpu_products' modules: its own kernels and examples/gemm.tile for f8e4m3, f32 and f32 on tf32.
    if [ -x "$build/tests/gpu/gpu_products" ]; then
        "$build/tests/gpu/gpu_products" --print-source > "$out/$arch/products.tile"
        "$tilec" "$out/$arch/products.tile" -arch="$arch" -o "$out/$arch/products.ptx"
        "$tilec" "$src/examples/gemm.tile" -arch="$arch" -DT=f8e4m3 -o "$out/$arch/gemm_f8e4m3.ptx"
        "$tilec" "$src/examples/gemm.tile" -arch="$arch" -DT=f32 -o "$out/$arch/gemm_f32.ptx"
        "$tilec" "$src/examples/gemm.tile" -arch="$arch" -DT=f32 --pass-option mma_select.tf32=1 \
            -o "$out/$arch/gemm_tf32.ptx"
    fi
    # gpu_math's kernels: one per math builtin and dtype, from its own source.
    if [ -x "$build/tests/gpu/gpu_math" ]; then
        "$build/tests/gpu/gpu_math" --print-source > "$out/$arch/math.tile"
        "$tilec" "$out/$arch/math.tile" -arch="$arch" -o "$out/$arch/math.ptx"
    fi
    echo "$arch: $(ls "$out/$arch"/*.ptx | wc -l) modules in $out/$arch"
done
