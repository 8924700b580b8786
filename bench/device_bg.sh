#!/usr/bin/env bash
# device_bg.sh - one whole bench/device.sh run when it takes longer than
# one command of the device machine may: the run goes on in a process
# session of its own (setsid), which outlives the command that started it
# while the machine stays held, and later commands wait for it.
#
#   bench/device_bg.sh start            start `bench/device.sh` (environment
#                                       passed on: PROFILE, SKIP_TC, ...)
#   bench/device_bg.sh wait SECONDS     print the log's new lines for up to
#                                       SECONDS (or until the run ends: its
#                                       exit status); every output file so
#                                       far packed in $OUT/run.tgz
#                                       (disassemblies in $OUT/sass.tgz)
#
# The outputs go to $DEVRUN (default /tmp/devrun), not $OUT: the device
# tool empties $OUT before each command. Issue the `wait` commands back to
# back (the machine is given back when idle).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
run="${DEVRUN:-/tmp/devrun}"

case "${1:-}" in
  start)
    rm -rf "$run"
    mkdir -p "$run"
    OUT="$run/out" setsid bash -c "bash '$root/bench/device.sh' > '$run/log.txt' 2>&1; echo \$? > '$run/rc'" \
      < /dev/null > /dev/null 2>&1 &
    echo "started bench/device.sh (log $run/log.txt)"
    ;;
  wait)
    limit="${2:-540}"
    if [ ! -f "$run/log.txt" ]; then
      # a fresh machine: the one that ran `start` was given back (idle)
      echo "no run on this machine ($run/log.txt missing): the machine that ran 'start' was given back; start again" >&2
      exit 3
    fi
    t0=$(date +%s)
    shown=0
    [ -f "$run/shown" ] && shown=$(cat "$run/shown")
    while :; do
      n=$(wc -l < "$run/log.txt" 2>/dev/null || echo 0)
      [ "$n" -gt "$shown" ] && sed -n "$((shown + 1)),${n}p" "$run/log.txt" && shown=$n
      echo "$shown" > "$run/shown"
      [ -f "$run/rc" ] && break
      [ $(( $(date +%s) - t0 )) -ge "$limit" ] && break
      sleep 5
    done
    if [ -f "$run/rc" ]; then
      echo "bench/device.sh ended: exit status $(cat "$run/rc")"
    else
      echo "(still running after ${limit} s; the outputs so far:)"
    fi
    # every wait returns what the run has written so far, should the
    # machine go before the next one; the device tool returns files up to
    # 16 MiB: the disassemblies apart
    if [ -n "${OUT:-}" ]; then
      (cd "$run" && tar czf "$OUT/run.tgz" --exclude='*.sass' log.txt out &&
        tar czf "$OUT/sass.tgz" --files-from <(cd "$run" && find out -name '*.sass')) &&
        echo "outputs: \$OUT/run.tgz, \$OUT/sass.tgz ($(du -h "$OUT/run.tgz" | cut -f1), $(du -h "$OUT/sass.tgz" | cut -f1))"
    fi
    ;;
  *)
    sed -n '2,16p' "$0"
    exit 2
    ;;
esac
