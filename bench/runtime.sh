# shellcheck shell=bash disable=SC2154
# Sourced by the GPU-machine scripts (bench/device.sh, attn_xp.sh, attn_stalls.sh)
# with $root (the checkout) and $out (the results folder) set: builds
# libtilert alone (cmake -DTILEC_COMPILER=OFF: the GPU host has no LLVM) in
# $rt, with the build machine's DLPack header carried in .devcarry/include
# when present, logs to $out/cmake.log (its tail on failure, then exit 1),
# and exports TILEC_LIB_DIR and PYTHONPATH for bench/*.py.
rt=/tmp/tilert-build
dl=()
[ -f "$root/.devcarry/include/dlpack/dlpack.h" ] && dl=(-DDLPACK_INCLUDE_DIR="$root/.devcarry/include")
cmake -S "$root" -B "$rt" -DTILEC_COMPILER=OFF -DCMAKE_BUILD_TYPE=Release "${dl[@]}" > "$out/cmake.log" 2>&1 &&
  cmake --build "$rt" -j 16 >> "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
export TILEC_LIB_DIR="$rt/lib"
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
