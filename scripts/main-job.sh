#!/usr/bin/env bash
# The main job: build tilec and compile examples/attention.tile for sm_100a.
# Writes attention.ptx + attention.meta in the current directory and, where
# the CUDA toolkit is installed, proves with ptxas that the PTX assembles.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh"
tilec="$root/build/bin/tilec"
"$tilec" "$root/examples/attention.tile" -arch=sm_100a -o attention.ptx
echo "main-job: wrote attention.ptx and attention.meta (sm_100a)"
ptxas=$(command -v ptxas || true)
[ -n "$ptxas" ] || { [ -x /usr/local/cuda/bin/ptxas ] && ptxas=/usr/local/cuda/bin/ptxas; } || true
if [ -n "$ptxas" ]; then
  "$ptxas" -arch=sm_100a attention.ptx -o attention.cubin
  echo "main-job: ptxas -arch=sm_100a accepted attention.ptx (attention.cubin)"
else
  echo "main-job: no CUDA toolkit found: the PTX was not assembled"
fi
