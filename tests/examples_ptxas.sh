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
ptxas=$(command -v ptxas || { [ -x /usr/local/cuda/bin/ptxas ] && echo /usr/local/cuda/bin/ptxas; })
[ -n "$ptxas" ] || { echo "examples_ptxas: ptxas not found: skipped"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
for f in "$ex"/*.tile; do
  for arch in sm_86 sm_90a sm_100a; do
    name=$(basename "$f" .tile)_$arch
    n=$((n + 1))
    if ! "$tilec" "$f" -arch=$arch --no-ptxas -o "$tmp/$name.ptx" 2> "$tmp/$name.err"; then
      echo "FAIL $name: tilec: $(head -3 "$tmp/$name.err")"; fail=1; continue
    fi
    if ! "$ptxas" -arch=$arch -v "$tmp/$name.ptx" -o "$tmp/$name.cubin" > "$tmp/$name.log" 2>&1; then
      echo "FAIL $name: ptxas rejects it: $(grep -m3 -i error "$tmp/$name.log")"; fail=1; continue
    fi
    if grep -qi "warning" "$tmp/$name.log"; then
      echo "FAIL $name: $(grep -m3 -i warning "$tmp/$name.log")"; fail=1
    fi
    # per entry function: "Function properties for F" then its stack/spill line
    spilled=$(awk '/Function properties for/ { f = $NF } /bytes spill/ && ($5 + 0 > 0 || $9 + 0 > 0) { print f }' \
              "$tmp/$name.log")
    for fn in $spilled; do
      echo "FAIL $name: $fn spills: $(grep -A1 "properties for $fn" "$tmp/$name.log" | tail -1 | tr -s ' ')"; fail=1
    done
    regs=$(grep -oE "Used [0-9]+ registers" "$tmp/$name.log" | head -1)
    echo "ok   $name: $regs"
  done
done
echo "$n compiles"
exit $fail
