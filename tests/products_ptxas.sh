#!/usr/bin/env bash
# The products of every dtype the code generator takes, through ptxas:
# examples/gemm.tile with T = f8e4m3, f8e5m2 (B stored [K, N]: mma.sync,
# operands converted to f16 in registers), tests/perf/gemm_f8_nt.tile with
# T = f8e4m3, f8e5m2 (B given as [N, K] rows: on sm_90a wgmma m64nNk32 with
# 8-bit operands in warp-specialized roles fed by TMA, elsewhere mma.sync
# as above), f32 (simt: f32 fma; with the option mma_select.tf32=1
# mma.sync m16n8k8 .tf32) and tests/products/gemm_i8.tile
# (mma.sync m16n8k32 .s8; with BK = 16, simt: i32 multiply-add), each for
# sm_86, sm_90a and sm_100a; `ptxas -arch=ARCH -v` must accept the PTX with
# no warning and no spill, and the PTX must hold the instructions the
# family lowers to (mma.sync ...f16 for f8, fma.rn.f32 and no mma for f32,
# mma.sync ...s8 for i8, mul.lo.s32 / mad.lo.s32 and no mma for i8 at BK = 16).
# usage: products_ptxas.sh TILEC SOURCE_DIR   (exit 77 without ptxas)
set -u
tilec=$1; src=$2
. "$(dirname "$0")/ptxas_check.sh"
ptxas_find products_ptxas
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
for what in f8e4m3 f8e5m2 nt_f8e4m3 nt_f8e5m2 f32 f32tf32 i8 i8k16; do
  for arch in sm_86 sm_90a sm_100a; do
    name=${what}_$arch
    n=$((n + 1))
    if [ $what = i8 ]; then
      set -- "$src/tests/products/gemm_i8.tile"
    elif [ $what = f32tf32 ]; then
      set -- "$src/examples/gemm.tile" -DT=f32 --pass-option mma_select.tf32=1
    elif [ ${what#nt_} != $what ]; then
      set -- "$src/tests/perf/gemm_f8_nt.tile" -DT=${what#nt_}
    elif [ $what = i8k16 ]; then
      set -- "$src/tests/products/gemm_i8.tile" -DBK=16
    else
      set -- "$src/examples/gemm.tile" -DT=$what
    fi
    if ! "$tilec" "$@" -arch=$arch --no-ptxas -o "$tmp/$name.ptx" 2> "$tmp/$name.err"; then
      echo "FAIL $name: tilec: $(head -3 "$tmp/$name.err")"; fail=1; continue
    fi
    case $what in
      nt_f8*)
        if [ $arch = sm_90a ]; then
          ty=${what#nt_f8}
          want="wgmma\.mma_async\.sync\.aligned\.m64n[0-9]+k32\.f32\.$ty\.$ty"; nowant=''
          if ! grep -q 'cp\.async\.bulk\.tensor' "$tmp/$name.ptx"; then
            echo "FAIL $name: no TMA (cp.async.bulk.tensor) in the PTX"; fail=1
          fi
        else
          want='mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32'; nowant='wgmma'
        fi ;;
      f8*) want='mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32'; nowant='' ;;
      f32) want='fma\.rn\.f32'; nowant='mma\.' ;;
      f32tf32) want='mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32'; nowant='' ;;
      i8) want='mma\.sync\.aligned\.m16n8k32\.row\.col\.s32\.s8\.s8\.s32'; nowant='' ;;
      i8k16) want='ma?[du]l?\.lo\.s32'; nowant='mma\.' ;;
    esac
    if ! grep -qE "$want" "$tmp/$name.ptx"; then
      echo "FAIL $name: no $want in the PTX"; fail=1
    fi
    if [ -n "$nowant" ] && grep -qE "$nowant" "$tmp/$name.ptx"; then
      echo "FAIL $name: $nowant in the PTX"; fail=1
    fi
    ptxas_check "$name" $arch || fail=1
  done
done
echo "$n compiles"
exit $fail
