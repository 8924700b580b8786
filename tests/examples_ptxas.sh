#!/usr/bin/env bash
# Every example compiles with its defaults for sm_86, sm_90a and sm_100a,
# and `ptxas -arch=ARCH -v` accepts the PTX with no warning and no spill in
# any kernel (the portable variants a module with roles carries included);
# among the warnings, the ones that mean a slow kernel on sm_90a, C7508
# ('setmaxnreg' ignored: registers at entry unknown), C7515 (wgmma
# serialized: registers of the accumulators touched in flight), C7517 /
# C7519 (warpgroup.wait / arrive injected).
# usage: examples_ptxas.sh TILEC EXAMPLES_DIR   (exit 77 without ptxas)
set -u
tilec=$1; ex=$2
. "$(dirname "$0")/ptxas_check.sh"
ptxas_find examples_ptxas
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
for f in "$ex"/*.tile; do
  for arch in sm_86 sm_90a sm_100a; do
    name=$(basename "$f" .tile)_$arch
    n=$((n + 1))
    if ! "$tilec" "$f" -arch=$arch --no-ptxas -o "$tmp/$name.ptx" 2> "$tmp/$name.err"; then
      echo "FAIL $name: tilec: $(head -3 "$tmp/$name.err")"; fail=1; continue
    fi
    ptxas_check "$name" $arch || fail=1
  done
done
echo "$n compiles"
exit $fail
