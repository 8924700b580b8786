#!/usr/bin/env bash
# Install what building and testing tilec needs on a fresh Debian/Ubuntu
# machine (Debian 12 "bookworm" with its security archive: LLVM 22.1).
# Idempotent: a package already present is left alone.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PKGS=(build-essential cmake pkg-config re2c check libdlpack-dev
      llvm-22-dev llvm-22-tools libzstd-dev zlib1g-dev clang libclang-rt-14-dev python3
      python3-pip python3-venv python3-setuptools python3-wheel binutils)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${missing[@]}"
else
  echo "setup: all packages present"
fi
if [ -x /usr/local/cuda/bin/ptxas ]; then
  echo "setup: CUDA toolkit found (ptxas tests will run)"
else
  echo "setup: no CUDA toolkit at /usr/local/cuda: tests that need ptxas will be reported unsupported"
fi
