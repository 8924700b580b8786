#!/usr/bin/env bash
# The whole test suite: normal build + ctest; ASan/UBSan build + ctest;
# the front-end fuzzer for a bounded time on the checked-in corpus, then
# the .tir, metadata and whole-compile fuzzers (tests/fuzz/RUNS.md).
# FUZZ_SECONDS (default 120) bounds the front-end run; FUZZ_SECONDS_EACH
# (default 60) each of the other three.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/lib/llvm-22/bin:$PATH"
FUZZ_SECONDS=${FUZZ_SECONDS:-120}
FUZZ_SECONDS_EACH=${FUZZ_SECONDS_EACH:-60}
J=$(nproc)

echo "== build (RelWithDebInfo)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$J"
echo "== tests"
(cd build && ctest --output-on-failure -j"$J")

echo "== build (ASan + UBSan)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTILEC_SANITIZE=ON
cmake --build build-asan -j"$J"
echo "== tests under ASan + UBSan"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -j"$J")

echo "== fuzz the front end for ${FUZZ_SECONDS}s"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DTILEC_FUZZ=ON -DTILEC_SANITIZE=ON
cmake --build build-fuzz -j"$J" --target fuzz_frontend fuzz_tir fuzz_meta fuzz_compile
mkdir -p build-fuzz/corpus
./build-fuzz/bin/fuzz_frontend -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=4096 \
   -dict=tests/fuzz/tile.dict build-fuzz/corpus tests/fuzz/corpus 2>&1 | tail -n 5
echo "fuzz: no crash, hang or sanitizer report in ${FUZZ_SECONDS}s"
for t in tir meta compile; do
  echo "== fuzz $t for ${FUZZ_SECONDS_EACH}s"
  mkdir -p "build-fuzz/corpus-$t"
  extra=(-timeout=10)
  [ "$t" = compile ] && extra=(-timeout=30 -dict=tests/fuzz/tile.dict)   # a compile under ASan: seconds
  ./build-fuzz/bin/fuzz_$t -max_total_time="$FUZZ_SECONDS_EACH" -rss_limit_mb=4096 "${extra[@]}" \
     "build-fuzz/corpus-$t" "tests/fuzz/$t" 2>&1 | tail -n 3
  echo "fuzz_$t: no crash, hang or sanitizer report in ${FUZZ_SECONDS_EACH}s"
done
