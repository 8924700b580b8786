#!/usr/bin/env bash
# The main job: build tilec and compile examples/attention.tile for sm_100a.
# Writes attention.ptx + attention.meta in the current directory. Where this
# build's code generator cannot yet lower an op of the kernel, it says so,
# writes the Tile IR (attention.tir) instead, and exits 0.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh"
tilec="$root/build/bin/tilec"
src="$root/examples/attention.tile"
if "$tilec" "$src" -arch=sm_100a -o attention.ptx 2> attention.err; then
  cat attention.err >&2
  echo "main-job: wrote attention.ptx and attention.meta (sm_100a)"
  exit 0
fi
status=$?
cat attention.err >&2
if grep -q "not supported by the code generator yet" attention.err; then
  "$tilec" "$src" -arch=sm_100a --emit=tir -o attention.tir
  echo "main-job: this build cannot generate PTX for attention yet (see above);" \
       "stopped after the Tile IR pipeline and wrote attention.tir"
  exit 0
fi
exit $status
