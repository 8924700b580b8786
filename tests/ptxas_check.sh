# Sourced by tests/examples_ptxas.sh and tests/products_ptxas.sh: the
# ptxas side of their checks, in one place.
#
# ptxas_find WHO: sets $ptxas (on PATH, else /usr/local/cuda/bin/ptxas);
#   without one, says "WHO: ptxas not found: skipped" and exits 77.
# ptxas_check NAME ARCH: `ptxas -arch=ARCH -v` on $tmp/NAME.ptx (log in
#   $tmp/NAME.log); prints a FAIL line for a rejection, a warning or a
#   kernel that spills, then (unless rejected) "ok   NAME: Used N registers";
#   returns 1 on any FAIL.

ptxas_find() {
  ptxas=$(command -v ptxas || { [ -x /usr/local/cuda/bin/ptxas ] && echo /usr/local/cuda/bin/ptxas; })
  [ -n "$ptxas" ] || { echo "$1: ptxas not found: skipped"; exit 77; }
}

ptxas_check() {
  local name=$1 arch=$2 rc=0 spilled fn regs
  if ! "$ptxas" -arch=$arch -v "$tmp/$name.ptx" -o "$tmp/$name.cubin" > "$tmp/$name.log" 2>&1; then
    echo "FAIL $name: ptxas rejects it: $(grep -m3 -i error "$tmp/$name.log")"; return 1
  fi
  if grep -qi "warning" "$tmp/$name.log"; then
    echo "FAIL $name: $(grep -m3 -i warning "$tmp/$name.log")"; rc=1
  fi
  # per entry function: "Function properties for F" then its stack/spill line
  spilled=$(awk '/Function properties for/ { f = $NF } /bytes spill/ && ($5 + 0 > 0 || $9 + 0 > 0) { print f }' \
            "$tmp/$name.log")
  for fn in $spilled; do
    echo "FAIL $name: $fn spills: $(grep -A1 "properties for $fn" "$tmp/$name.log" | tail -1 | tr -s ' ')"; rc=1
  done
  regs=$(grep -oE "Used [0-9]+ registers" "$tmp/$name.log" | head -1)
  echo "ok   $name: $regs"
  return $rc
}
