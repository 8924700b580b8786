#!/usr/bin/env bash
# cache_hit.sh - what a compile-cache hit costs a new process (goal, issue 30:
# under 1 ms). Runs the cache test's script (tests/cache/run.sh) with a bound:
# 5 new processes each get a disk hit then a memory hit of
# examples/attention.tile; the best thread CPU time of each kind must be
# under MAX_US microseconds.
#
#   bench/cache_hit.sh [BUILD] [MAX_US]    BUILD defaults to build, MAX_US to 1000
#
# The ctest `cache` runs the same script without a bound (a shared or loaded
# machine moves the time); record a run here in bench/RESULTS.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
max_us="${2:-1000}"
echo "load: $(uptime | sed 's/.*load average: //')"
exec bash "$root/tests/cache/run.sh" "$build/tests/cache_probe" "$build/bin/tilec" "$root" "$max_us"
