#!/usr/bin/env bash
# One call on the GPU machine: build the runtime, check correctness, time
# everything against the peers measured in the same run, print a table.
#
# Expects the kernels precompiled on the build machine by bench/prepare.sh
# under .devcarry/ (carry it with the call), so this host needs no LLVM:
#   .devcarry/kernels/<arch>/*.ptx + .meta   correctness kernels
#   .devcarry/perf/*.ptx + .meta             benchmark kernels (+ variants.txt)
#   .devcarry/include/dlpack/dlpack.h        (the GPU image has no libdlpack-dev)
# Without them, bench.py falls back to tilec.compile (needs libtilec).
# Writes the full results under $OUT (or ./bench-out when OUT is unset).
#   bench/device.sh [bench.py options: --skip-bench, --arches sm_90a]
#   SKIP_TC=1 bench/device.sh   skips the tensor-core runs (GEMM, attention)
#   PART=1 / 2 / 3 / 4 bench/device.sh   the run in four calls of the device
#       tool, each under its time limit: 1 the C host tests, memory-bound
#       kernels, GEMM and the f8e4m3 GEMM; 2 attention (portable grid, sm_90a, FlashAttention
#       4's numerics, plain kernels, interpreter); 3 the Pallas peer, launch
#       cost and the checks after them; 4 the sanitizer pass. Unset: all, in
#       one run (longer than one command of the device tool may take:
#       bench/device_bg.sh starts it in its own process session and waits
#       for it over several commands).
# The sanitizer pass: every kernel file the run launches (the C host
# tests' kernels, the memory-bound benchmark kernels on small rows, every
# attention and GEMM file by bench/sanitize.py, the examples of the
# interpreter check) under compute-sanitizer memcheck, racecheck and
# synccheck; any finding fails the run. SAN_TOOLS="racecheck" runs only
# the tools named; SAN_ONLY=TEXT only the attention and GEMM files whose
# path holds TEXT (bench/sanitize.py --only), for a pass split over calls.
# Last, bench/validate.sh: the report against Nsight Compute, line
# information under memcheck and ncu, the interpreter against the GPU on
# every example, and the PNG charts (roofline, attention and GEMM TFLOP/s)
# into $OUT.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/bench-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1

echo "== device ($(date -u +%Y-%m-%dT%H:%MZ))"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/device.txt"

# SM clock, power and temperature every 200 ms, and the phase marks they are
# summarised by at the end (bench/clocks.py).
nvidia-smi --query-gpu="$(python3 "$root/bench/clocks.py" --query)" \
  --format=csv,noheader,nounits -lms 200 -f "$out/clocks.csv" 2>/dev/null &
clocks_pid=$!
trap 'kill "$clocks_pid" 2>/dev/null' EXIT
mark() { echo "$(date +%s.%N) $1" >> "$out/phases.txt"; }
part() { [ -z "${PART:-}" ] || [ "$PART" = "$1" ]; }
: > "$out/phases.txt"
mark setup

echo "== build libtilert (runtime only: no LLVM on this host)"
# shellcheck source=bench/runtime.sh
. "$root/bench/runtime.sh"     # libtilert in $rt; TILEC_LIB_DIR, PYTHONPATH
ls "$root/.devcarry/kernels" > /dev/null 2>&1 || echo "note: no .devcarry/kernels (run bench/prepare.sh first); compiling with libtilec"
[ -f "$root/.devcarry/compile_times.txt" ] && { echo "== compile times to PTX (build machine, --time-passes totals, best of 15)"; cat "$root/.devcarry/compile_times.txt"; }
status=0

mark c-host-tests
echo "== C host tests (libtilert from C, PTX compiled by tilec on the build machine)"
# The C host test binaries (tests/gpu, built with libtilert) and the file
# each writes its output to: kernels of every example and op, atomic_add
# (split-K, column sums), rand/scan (dropout, cumsum), slices/gather
# (gather_rows), norms and losses (rmsnorm, cross_entropy, layernorm_bwd),
# products beyond bf16/f16 (f8e4m3, f32, tf32, i8), every math builtin on
# f32/bf16/f16 against the C library in double (c_math: the largest error
# per builtin and dtype), decode attention through a block table
# (c_decode).
c_tests="gpu_kernels:c_tests gpu_atomic:c_atomic gpu_rand_scan:c_rand_scan gpu_gather_shape:c_gather_shape
         gpu_norm_loss:c_norm_loss gpu_products:c_products gpu_math:c_math gpu_decode:c_decode"
if part 1 && [ -d "$root/.devcarry/gputest" ]; then
  for t in $c_tests; do
    [ -x "$rt/tests/gpu/${t%%:*}" ] || continue
    "$rt/tests/gpu/${t%%:*}" "$root/.devcarry/gputest" > "$out/${t##*:}.txt" 2>&1 || status=1
    grep -E "FAIL|error|passed, " "$out/${t##*:}.txt" | tail -n 12
  done
fi

if part 1; then
  mark memory-bound
  echo "== Python correctness + benchmark: memory-bound kernels"
  python3 "$root/bench/bench.py" --out "$out" "$@" 2>&1 | tee "$out/bench.txt" || status=1
fi

if part 1 && [ -z "${SKIP_TC:-}" ] && [ -d "$root/.devcarry/gemm" ]; then
  mark gemm
  echo "== GEMM (tensor cores: mma.sync on sm_86 PTX; TMA, wgmma and warp-specialized roles on sm_90a)"
  python3 "$root/bench/gemm_bench.py" --repeat 3 > "$out/gemm.txt" 2>&1 || status=1
  grep -vE "^check .* ok" "$out/gemm.txt" | tail -n 30
  # The SASS of the sm_90a GEMMs: the Hopper instructions the PTX asked for.
  for p in "$root"/.devcarry/gemm/default_sm90a*.ptx; do
    [ -f "$p" ] || continue
    ptxas -arch=sm_90a "$p" -o /tmp/sm90a.cubin && cuobjdump -sass /tmp/sm90a.cubin > "$out/$(basename "$p" .ptx).sass" &&
      echo "$(basename "$p"): SASS HGMMA $(grep -c HGMMA "$out/$(basename "$p" .ptx).sass")," \
           "UTMALDG $(grep -c UTMALDG "$out/$(basename "$p" .ptx).sass"), USETMAXREG $(grep -c USETMAXREG "$out/$(basename "$p" .ptx).sass")," \
           "SYNCS $(grep -c SYNCS "$out/$(basename "$p" .ptx).sass")"
  done
  # sm_100a (no B200 here: assembled and disassembled only): the tcgen05
  # products, their commits and the TMA loads in the SASS
  for p in "$root"/.devcarry/gemm/default_sm100a_bf16.ptx "$root"/.devcarry/attn/attn_bf16_sm_100a_d128_m128_n64_f.ptx; do
    [ -f "$p" ] || continue
    s="$out/$(basename "$p" .ptx).sass"
    if ptxas -arch=sm_100a "$p" -o /tmp/sm100a.cubin && cuobjdump -sass /tmp/sm100a.cubin > "$s"; then
      mma=$(grep -cE 'UTC[A-Z0-9]*MMA' "$s"); bar=$(grep -cE 'UTC[A-Z0-9]*BAR' "$s"); tma=$(grep -c UTMALDG "$s")
      echo "$(basename "$p"): SASS tcgen05 products (UTC*MMA) $mma, commits (UTC*BAR) $bar, UTMALDG $tma"
      # the products and the TMA loads must be there (the commits' mnemonic is printed, not required)
      [ "$mma" -gt 0 ] && [ "$tma" -gt 0 ] || { echo "FAIL $(basename "$p"): no tcgen05 product or TMA load in the SASS"; status=1; }
    else
      echo "FAIL $(basename "$p"): ptxas or cuobjdump for sm_100a"; status=1
    fi
  done
  mark gemm-power
  echo "== power and energy per FLOP: tilec's GEMMs, Triton's mma.sync GEMM and cuBLAS (bench/gemm_power.py)"
  python3 "$root/bench/gemm_power.py" 2.0 2>&1 | tee "$out/gemm_power.txt" || status=1
fi

# f8e4m3 GEMMs (tests/perf/gemm_f8_nt.tile, examples/gemm.tile -DT=f8e4m3)
# against torch._scaled_mm at 4096^3 and 8192^3: checked against float32,
# then timed interleaved (bench/gemm_f8_bench.py; bench/prepare.sh compiles
# them into .devcarry/gemm_f8).
if part 1 && [ -z "${SKIP_TC:-}" ] && [ -d "$root/.devcarry/gemm_f8" ]; then
  mark gemm-f8
  echo "== f8e4m3 GEMM against torch._scaled_mm (bench/gemm_f8_bench.py)"
  python3 "$root/bench/gemm_f8_bench.py" > "$out/gemm_f8.txt" 2>&1 || status=1
  grep -E "FAIL|ERROR|skip|^--|^   |^f8_" "$out/gemm_f8.txt" | tail -n 30
fi

if part 2 && [ -z "${SKIP_TC:-}" ] && [ -d "$root/.devcarry/attn" ]; then
  mark attention
  echo "== attention"
  # Six interleaved rounds of 50 ms each rather than three of 100: the same
  # timed time spread over more points of the power limit's clock swings
  # (kernels with byte-identical machine code differed by up to 6% in a
  # mean of three rounds: bench/RESULTS.md 2026-12-01 07:21).
  python3 "$root/bench/attn_bench.py" --repeat 6 --rep-ms 50 > "$out/attn.txt" 2>&1 || status=1
  tail -n 32 "$out/attn.txt"
fi

if part 2 && [ -z "${SKIP_TC:-}" ] && [ -d "$root/.devcarry/wsa" ]; then
  mark attention-sm90a
  echo "== attention for sm_90a (warp-specialized roles: TMA, wgmma), bench/sm90_probe.py"
  for v in "128 false 0" "128 true 1" "64 false 0" "64 true 1"; do
    set -- $v
    python3 "$root/bench/sm90_probe.py" attn "$root/.devcarry/wsa/attn_d$1_$2.ptx" 1 16 1000 $1 $3 4 16 4096 $1 $3 \
      1 16 16384 $1 $3 2>&1 | tee -a "$out/attn_sm90a.txt" | grep -E "^attn|Error" || status=1
  done
  grep -qE "nan=[1-9]" "$out/attn_sm90a.txt" && status=1
  # The sm_90a attention as the compiler picks it (bench/prepare.sh:
  # .devcarry/fa4/): every file on the correctness matrix (bf16 and f16),
  # the bf16 ones timed interleaved with flash and cuDNN, and GQA.
  if [ -d "$root/.devcarry/fa4" ]; then
    echo "== sm_90a attention as compiled by default: correctness matrix, timing, GQA (bench/attn_bench.py --matrix)"
    python3 "$root/bench/attn_bench.py" --dir "$root/.devcarry/fa4" --variants-only --matrix --repeat 3 \
      --rep-ms 50 --ns 1024,4096,16384 --gqa > "$out/attn_fa4.txt" 2>&1 || status=1
    grep -E "FAIL|ERROR|^  attn_" "$out/attn_fa4.txt" | grep -vE " OK$" | head -20
    sed -n '/^attention forward/,/^portable path/p' "$out/attn_fa4.txt" | head -20
    sed -n '/^GQA/,$p' "$out/attn_fa4.txt" | head -4
  fi
fi

if part 2 && [ -z "${SKIP_TC:-}" ] && [ -d "$root/.devcarry/plain" ]; then
  mark plain
  echo "== kernels written plainly (tests/perf) against the examples"
  python3 "$root/bench/perf_plain.py" > "$out/plain.txt" 2>&1 || status=1
  grep -vE "^check .* ok" "$out/plain.txt" | tail -n 24
fi

if part 2 && [ -z "${SKIP_TC:-}" ] && [ -f "$root/.devcarry/attn_interp/manifest.txt" ]; then
  mark attention-interpreter
  echo "== attention: Tile IR interpreter vs GPU (small shapes, same kernels and inputs)"
  python3 "$root/bench/attn_interp_check.py" > "$out/attn_interp.txt" 2>&1 || status=1
  grep -vE "^  (ok|skip) " "$out/attn_interp.txt" | tail -n 30
fi

if part 3 && [ -z "${SKIP_TC:-}" ] && [ -d "$root/.devcarry/fa4" ]; then
  mark pallas
  echo "== attention f16 on sm_90a beside JAX Pallas on Mosaic GPU (FlashAttention 3), bench/pallas_peer.py"
  python3 "$root/bench/pallas_peer.py" > "$out/pallas.txt" 2>&1 || status=1
  grep -E "^D=|unavailable|^f16|FAIL" "$out/pallas.txt" | tail -n 24
fi

if part 3 && [ -f "$root/.devcarry/launch/vector_add.meta" ]; then
  mark launch-cost
  echo "== host cost of a launch: Python (tilec, Triton, torch) and the C call alone, bench/launch_cost.py"
  python3 "$root/bench/launch_cost.py" --out "$out" > "$out/launch_cost.txt" 2>&1 || status=1
  tail -n 20 "$out/launch_cost.txt"
fi

if part 3 && [ -z "${SKIP_TC:-}" ] && [ -d "$root/.devcarry/tune" ]; then
  mark autotune
  echo "== autotuning (C tilert_tune, Python tilec.Tuned) beside Triton's autotune, bench/autotune.sh"
  OUT="$out" bash "$root/bench/autotune.sh" > "$out/autotune_all.txt" 2>&1 || status=1
  grep -vE "^\[|^--" "$out/autotune_all.txt" | tail -n 30
fi

# The report against Nsight Compute, the line information and the
# interpreter mode on every example, then the charts (bench/validate.sh;
# skipped with a note where bench/prepare.sh made no .devcarry/validate).
if part 3; then
  mark validate
  OUT="$out" "$root/bench/validate.sh" || status=1
fi

# Every kernel the run launches, under compute-sanitizer: memcheck,
# racecheck and synccheck (one case a kernel for the last two: they are
# the slow tools). The tools' work is mostly the host's (instrumenting
# each kernel's code), so the processes run side by side, SAN_JOBS at a
# time (default 14 of the host's 16 cores, the longest first). API
# errors are not reported: the launch checks' refusals call the driver on
# host memory on purpose. Any finding fails the run.
if part 4; then
  mark sanitize
  echo "== compute-sanitizer: every kernel the run launches (memcheck, racecheck, synccheck)"
  san() {   # TOOL NAME COMMAND...: one process under the tool; its verdict line in $out/san_NAME_TOOL.sum
    local tool=$1 name=$2 t0 f rc v
    shift 2
    f="$out/san_${name}_$tool.txt"
    t0=$(date +%s)
    compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 10 --report-api-errors no "$@" > "$f" 2>&1
    rc=$?
    v="$tool $name ($(( $(date +%s) - t0 )) s): $(grep -E 'passed, |files run|[0-9]+ passed' "$f" | tail -n 1)"
    v="$v | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | tail -n 1)"
    # gpu_tune's timing checks (a kernel made twice as slow measures so)
    # do not hold under an instrumenting tool: there only the tool's findings count
    if [ $rc = 9 ] || { [ $rc != 0 ] && [ "$name" != c_tune ]; } ||
       grep -qE "ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: [1-9]" "$f"; then
      v="FAIL $v (exit $rc: $(basename "$f"))"
    fi
    echo "$v" > "${f%.txt}.sum"
  }
  jobs_max=${SAN_JOBS:-14}
  # the clock sampler (nvidia-smi, started above) is a job of this shell
  # too: neither counted here nor waited for below (it runs until killed)
  throttle() { while [ "$(jobs -rp | grep -cvx "$clocks_pid")" -ge "$jobs_max" ]; do wait -n; done; }
  san_pids=()
  spawn() { throttle; san "$@" & san_pids+=($!); }   # TOOL NAME COMMAND...: san in the background
  rm -f "$out"/san_*.sum
  tools=${SAN_TOOLS:-memcheck racecheck synccheck}
  only=(); [ -n "${SAN_ONLY:-}" ] && only=(--only "$SAN_ONLY")
  has() { case " $tools " in *" $1 "*) return 0 ;; esac; return 1; }
  # The longest processes start first (racecheck and synccheck of the
  # attention and GEMM files, then of the memory-bound kernels), so the
  # short ones fill in beside them and the pass ends with its longest.
  # racecheck and synccheck: one case a file, all the files in one process
  # (side by side the processes share the GPU and take as long: the 61
  # files of 2026-12-04 in 154 s); memcheck's cases in 6 shards; the
  # memory-bound kernels (bench.py --sanitize) in 3 shards for the two
  # slow tools.
  for tool in racecheck synccheck memcheck; do
    has $tool || continue
    if [ -z "${SKIP_TC:-}" ]; then
      quick=(); [ "$tool" = memcheck ] || quick=(--quick)
      nsh=6; [ "$tool" = memcheck ] || nsh=1
      for ((i = 0; i < nsh; i++)); do
        spawn "$tool" "tc$i" python3 "$root/bench/sanitize.py" "${quick[@]}" "${only[@]}" --shard "$i/$nsh"
      done
    fi
    # SAN_ONLY: the attention and GEMM files alone (a pass split over calls)
    [ -n "${SAN_ONLY:-}" ] && continue
    [ "$tool" = memcheck ] && continue
    for ((i = 0; i < 3; i++)); do
      mkdir -p "$out/san_membound${i}_$tool"
      spawn "$tool" "membound$i" python3 "$root/bench/bench.py" --sanitize --shard "$i/3" --out "$out/san_membound${i}_$tool"
    done
  done
  for tool in $tools; do
    [ -n "${SAN_ONLY:-}" ] && break
    if [ "$tool" = memcheck ]; then
      mkdir -p "$out/san_membound_$tool"
      spawn "$tool" membound python3 "$root/bench/bench.py" --sanitize --out "$out/san_membound_$tool"
    fi
    if [ -d "$root/.devcarry/gputest" ]; then
      for t in $c_tests gpu_tune:c_tune; do
        [ -x "$rt/tests/gpu/${t%%:*}" ] || continue
        dir="$root/.devcarry/gputest"; [ "${t%%:*}" = gpu_tune ] && dir="$root/.devcarry/tune/gputest"
        [ -d "$dir" ] || continue
        spawn "$tool" "${t##*:}" "$rt/tests/gpu/${t%%:*}" "$dir"
      done
    fi
    if [ -f "$root/.devcarry/interp/manifest.json" ]; then
      spawn "$tool" examples python3 "$root/bench/interp_check.py"
    fi
  done
  [ ${#san_pids[@]} -gt 0 ] && wait "${san_pids[@]}"
  for tool in $tools; do cat "$out"/san_*_"$tool".sum; done
  grep -l "^FAIL" "$out"/san_*.sum > /dev/null 2>&1 && status=1
  # A finding in an attention or GEMM file, located: the PTX line (and
  # .tile line) of each PC the tool printed, by bench/sass_pc.py (PTX of
  # an older target runs here as this GPU's own arch)
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d '.')
  for f in "$out"/san_tc*_*.txt; do
    grep -qsE "ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: [1-9]" "$f" || continue
    echo "== where: $(basename "$f") (bench/sass_pc.py)"
    python3 "$root/bench/sass_pc.py" --log "$f" --arch "sm_$cc" > "${f%.txt}.where" 2>&1
    head -n 40 "${f%.txt}.where"
  done
fi

mark end
kill "$clocks_pid" 2>/dev/null
echo "== GPU clocks per phase (bench/clocks.py; samples every 200 ms)"
python3 "$root/bench/clocks.py" "$out/clocks.csv" "$out/phases.txt" | tee "$out/clocks.txt"

# Nsight Compute profile of chosen benchmark kernels (PROFILE="layernorm_16384
# default_bf16_256x128x64_s2 attn_bf16_sm_86_d128_m128_n64_f ...": a
# memory-bound, GEMM or attention variant name; NCU_N sets attention's N):
# the third launch of the tilec kernel, full section set, text summary into $OUT/NAME.ncu.txt.
for n in ${PROFILE:-}; do
  echo "== ncu $n"
  ncu --set full --print-details all -k "regex:^(softmax|layernorm|rmsnorm|cross_entropy|layernorm_bwd|gemm|attention)$" --launch-skip 2 --launch-count 1 \
    python3 "$root/bench/ncu_one.py" "$n" > "$out/$n.ncu.txt" 2>&1 || echo "ncu of $n failed"
  grep -E "Duration|Memory Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit|Achieved Occupancy|Registers Per|Eligible Warps|Issued Warp|No Eligible|Stall [A-Z]" \
    "$out/$n.ncu.txt" | awk '!/Stall/ || $NF + 0 >= 0.1' | head -n 30
done

# SASS of chosen benchmark kernels (DUMP_SASS="softmax_16384 layernorm_4096"):
# the build machine has ptxas but no disassembler.
for n in ${DUMP_SASS:-}; do
  ptx="$root/.devcarry/perf/$n.ptx"
  [ -f "$ptx" ] || { echo "no $ptx"; continue; }
  ptxas -arch=sm_90a "$ptx" -o "/tmp/$n.cubin" && cuobjdump -sass "/tmp/$n.cubin" > "$out/$n.sass" ||
    echo "sass of $n failed"
done
exit $status
