#!/bin/sh
# usage: roundtrip.sh TILEC EXAMPLES_DIR TMP_PREFIX
# For every example: lowered IR and fully optimised IR print, parse back and
# print to identical text.
set -e
tilec=$1; dir=$2; t=$3
for ex in vector_add softmax layernorm reduction transpose gemm attention; do
  "$tilec" "$dir/$ex.tile" --emit=tir --passes= -o "$t.$ex.0.tir"
  "$tilec" "$t.$ex.0.tir" --emit=tir --passes= -o "$t.$ex.1.tir"
  cmp "$t.$ex.0.tir" "$t.$ex.1.tir"
  "$tilec" "$dir/$ex.tile" --emit=tir -o "$t.$ex.2.tir"
  "$tilec" "$t.$ex.2.tir" --emit=tir --passes= -o "$t.$ex.3.tir"
  cmp "$t.$ex.2.tir" "$t.$ex.3.tir"
  echo "roundtrip $ex ok"
done
