#!/usr/bin/env python3
"""validate_report.py - the compiler's report (`tilec --report`) against
Nsight Compute on the H200: every example, one ncu run.

Build machine (bench/validate_prepare.sh runs it; needs tilec and ptxas):
    python3 bench/validate_report.py --prepare build/bin/tilec
compiles each case of CASES (every kernel of every example for sm_90a,
the GEMM and attention also for sm_86) with its launch sizes (`--dim`),
its defines and the H200's facts where the kernel reads them
(`--pass-option target.sms=132`, `target.smem-per-block`), with
`--report=FILE`, into .devcarry/validate/NAME.ptx, .meta, .report
(cases.json lists the commands), and tests/gpu/oob_store.tile with
-lineinfo for bench/lineinfo_check.py. A case whose `module` names
another case launches another kernel of that case's module (the
portable fallbacks of the GEMM and attention modules, launched
directly).

GPU machine (bench/validate.sh runs it; needs ncu, torch and libtilert):
    python3 bench/validate_report.py [--out DIR] [--only NAME,...]
runs ONE ncu process over `validate_report.py --launch`, which launches
each case's kernel once on its sizes through the Python package (inputs
made by torch; `-k` keeps torch's kernels out of the profile), then
`ncu --import ... --csv --page raw --print-units base` into
DIR/validate_ncu.csv, compares with the reports, prints a table and one
PASS/FAIL line per criterion, and writes DIR/validate.json (the numbers,
read by bench/charts.py). ncu runs with `--clock-control none` (the clocks
the GPU chooses, as in a benchmark, not its base clock) and flushes the
caches before each kernel (its default), as the roofline's DRAM bytes
assume. Exit status 0 when every criterion passes, 1 when one fails, 2
when ncu or the comparison could not run.
    python3 bench/validate_report.py --compare CSV [--launches JSON] [--out DIR]
redoes the comparison on a saved CSV (no GPU).

Criteria (one PASS / FAIL line each; a criterion with no kernel checked,
or a run with a problem (a case that failed to launch, ncu seeing other
launches than the driver made), fails, and its line names the problems,
which are also printed as PROBLEM lines just above the verdicts):
  occupancy    per sm_90a kernel, the report's theoretical blocks per SM
               and percentage (`occupancy:` in `== resources ==`) equal
               Nsight Compute's: the least of launch__occupancy_limit_
               {blocks,registers,shared_mem,warps} and
               sm__maximum_warps_per_active_cycle_pct (within its 0.1%
               print precision). The limiting resources of both are shown.
  bank         per kernel whose shared buffers (`shared buffer at L:C` in
  conflicts    `== code generation ==`) the report predicts conflict-free
               (each buffer's `swizzle:` line: wavefronts after = ideal):
               excess wavefronts under 1%. Where every shared-memory
               access of the kernel is modelled and predicted free, the
               kernel's SASS-level excess: each instruction's wavefronts
               against the ideal for its addresses
               (smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared over its
               _ideal; wgmma's operand reads included), with the l1tex
               hardware counters of the same ops printed beside it: those
               also count data-bank wavefronts that no instruction's
               addresses cause (on the H200 every LDS and STS of softmax
               was at its ideal in ncu's source view while the counters
               showed 0.9% and 2.8% over it). Otherwise the conflicts of
               the LSU operations the buffers' uses issue (ldmatrix:
               l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm over
               its wavefronts; cp.async: _op_ldgsts; 16-byte loads and
               stores: _op_ld, _op_st; an op this ncu does not count is
               left out); without op counters, the kernel's SASS-level
               excess. The kernel's whole excess is printed beside it
               (layout conversions through shared memory, which the report
               does not model, included). TMA writes do not go through the
               LSU: a kernel whose buffers see only those and wgmma reads,
               without SASS-level counters, is "not observable", not
               passed; the sm_86 cases (the same GEMM and attention on
               mma.sync, ldmatrix and cp.async) carry the LSU check. A layout conversion through shared memory
               (transpose, the GEMM's and attention's epilogues) carries the
               code generator's prediction for its st.shared writes and
               ld.shared reads (`bank model, warp 0:` on its line), checked
               on ncu's op_st / op_ld counters; ops that a buffer predicted
               to conflict also issues are left out of the check, and for
               ops only such buffers issue the predicted and measured
               excess are printed side by side. A reduction across warps
               through shared memory (softmax, layernorm, partial_sum)
               carries the same prediction on its line and is checked
               the same way; a conversion or reduction without one is
               named beside the kernel as not modelled.
               The portable fallbacks have no prediction (their pass
               decisions are not reported).
  time         per sm_90a kernel bound by memory bandwidth or the integer
               multipliers (`bound: memory bandwidth` or `bound: integer
               multiplies` in `== roofline ==`): the predicted time within
               25% of gpu__time_duration.sum (|predicted / measured - 1| <=
               0.25). A memory-bound prediction is first rescaled from
               the report's DRAM peak (its `peaks:` line: the target's
               device) to the profiled device's (dram__bytes.sum.
               peak_sustained x dram__cycles_elapsed.avg.per_second,
               where ncu gives them). The DRAM bytes predicted and
               measured (dram__bytes_{read,write}.sum) and the SM clock
               are printed beside it.
"""
import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARRY = os.environ.get("TILEC_CARRY", os.path.join(ROOT, ".devcarry"))
DIR = os.path.join(CARRY, "validate")
ARCH = "sm_90a"
OOB_TILE = os.path.join(ROOT, "tests", "gpu", "oob_store.tile")
H200 = {"target.sms": 132}
ATTN_H200 = {"target.sms": 132, "target.smem-per-block": 232448}

# name, file (examples/FILE.tile), kernel, defines, dims (the launch's
# sizes: --dim, and the tensors made on the GPU), options (pass options);
# "module": another case whose PTX holds this kernel.
CASES = [
    dict(name="vector_add", file="vector_add", kernel="vector_add", dims={"N": 1 << 28}),
    dict(name="softmax", file="softmax", kernel="softmax", defines={"BLOCK": 16384, "T": "bf16"},
         dims={"M": 8192, "N": 16384}),
    dict(name="layernorm", file="layernorm", kernel="layernorm", defines={"BLOCK": 16384, "T": "bf16"},
         dims={"M": 8192, "N": 16384}),
    dict(name="row_sum", file="reduction", kernel="row_sum", dims={"M": 8192, "N": 16384}),
    dict(name="partial_sum", file="reduction", kernel="partial_sum", dims={"N": 1 << 28, "NB": 1 << 16}),
    dict(name="transpose", file="transpose", kernel="transpose", defines={"T": "f32"},
         dims={"M": 8192, "N": 8192}),
    dict(name="cumsum", file="cumsum", kernel="cumsum", dims={"M": 16384, "N": 8192}),
    dict(name="dropout", file="dropout", kernel="dropout", defines={"T": "f32"}, dims={"N": 1 << 28}),
    dict(name="gather_rows", file="gather_rows", kernel="gather_rows", dims={"V": 1 << 20, "N": 1 << 20}),
    dict(name="scatter_rows", file="gather_rows", kernel="scatter_rows", dims={"V": 1 << 20, "N": 1 << 20}),
    dict(name="gemm", file="gemm", kernel="gemm", defines={"T": "bf16"},
         dims={"M": 4096, "N": 4096, "K": 4096}, options=H200),
    dict(name="gemm_portable", module="gemm", kernel="tilec_portable_gemm"),
    dict(name="attention", file="attention", kernel="attention", defines={"D": 128, "CAUSAL": "false"},
         dims={"Z": 4, "H": 16, "HK": 16, "N": 4096, "NK": 4096}, options=ATTN_H200),
    dict(name="attention_portable", module="attention", kernel="tilec_portable_attention"),
    # The mma.sync path (sm_86 PTX, which the H200 runs): cp.async writes and
    # ldmatrix reads of the swizzled buffers, which the shared-memory
    # counters see. The report's occupancy and roofline are for sm_86's
    # device, so only the bank conflicts are compared.
    dict(name="gemm_sm86", file="gemm", kernel="gemm", arch="sm_86", defines={"T": "bf16"}, inputs="gemm",
         dims={"M": 4096, "N": 4096, "K": 4096}, options={"target.smem-per-block": 232448}, checks=["bank"]),
    dict(name="attention_sm86", file="attention", kernel="attention", arch="sm_86", inputs="attention",
         defines={"D": 128, "CAUSAL": "false"}, dims={"Z": 4, "H": 16, "HK": 16, "N": 4096, "NK": 4096},
         options=ATTN_H200, checks=["bank"]),
]
CHECKS = ("occupancy", "bank", "time")
BY_NAME = {c["name"]: c for c in CASES}
TIME_TOL = 0.25          # |predicted / measured - 1|
# The bounds whose predicted time is checked: memory bandwidth, and the
# integer multipliers (the SIMT unit the roofline counts: dropout's Philox).
TIME_BOUNDS = ("memory bandwidth", "integer multiplies")
CONFLICT_TOL = 1.0       # percent of shared-memory wavefronts
OCC_TOL = 0.06           # percent points: the report prints one decimal


def module_case(case):
    """The case whose PTX, metadata and report hold this case's kernel."""
    return BY_NAME[case["module"]] if "module" in case else case


def tilec_command(tilec, case, out_dir):
    cmd = [tilec, os.path.join(ROOT, "examples", case["file"] + ".tile"), "-arch=" + case.get("arch", ARCH)]
    cmd += ["-D%s=%s" % kv for kv in sorted(case.get("defines", {}).items())]
    for kv in sorted(case.get("dims", {}).items()):
        cmd += ["--dim", "%s=%d" % kv]
    for kv in sorted(case.get("options", {}).items()):
        cmd += ["--pass-option", "%s=%s" % kv]
    cmd += ["--report=" + os.path.join(out_dir, case["name"] + ".report"),
            "-o", os.path.join(out_dir, case["name"] + ".ptx")]
    return cmd


def prepare(tilec, out_dir=DIR):
    """Compile every case (build machine)."""
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        if f.rsplit(".", 1)[-1] in ("ptx", "meta", "report", "json"):
            os.remove(os.path.join(out_dir, f))
    done = []
    for case in CASES:
        if "module" in case:
            continue
        cmd = tilec_command(tilec, case, out_dir)
        t0 = time.time()
        subprocess.run(cmd, check=True)
        rep = parse_report(open(os.path.join(out_dir, case["name"] + ".report")).read())
        roof = rep["roofline"].get(case["kernel"], {})
        occ = rep["kernels"].get(case["kernel"], {}).get("occupancy", {})
        print("validate %-12s %5.1f s  occupancy %s  %s" % (
            case["name"], time.time() - t0, "%.1f%%" % occ["pct"] if "pct" in occ else "?",
            "%s, %.1f us" % (roof["bound"], roof["us"]) if "us" in roof else roof.get("note", "no roofline")))
        done.append({"name": case["name"], "command": [os.path.relpath(c, ROOT) if c.startswith(ROOT) else c
                                                         for c in cmd]})
    # the seeded out-of-bounds store for bench/lineinfo_check.py
    cmd = [tilec, OOB_TILE, "-arch=" + ARCH, "-lineinfo", "-o", os.path.join(out_dir, "oob_store.ptx")]
    subprocess.run(cmd, check=True)
    done.append({"name": "oob_store", "command": [os.path.relpath(c, ROOT) if c.startswith(ROOT) else c
                                                  for c in cmd]})
    with open(os.path.join(out_dir, "cases.json"), "w") as f:
        json.dump({"arch": ARCH, "cases": CASES, "compiled": done}, f, indent=1)


# ---------------------------------------------------------------- the report

UNITS_US = {"s": 1e6, "ms": 1e3, "us": 1.0, "ns": 1e-3}
LIMITS = {"registers": "registers", "shared memory": "shared memory", "threads": "warps",
          "blocks per SM": "blocks"}


def parse_report(text):
    """The numbers of a `tilec --report` text:
    kernels: {name: {threads, regs, smem_dynamic, smem_static, smem_reserved,
                     occupancy: {blocks, warps, max_warps, pct, limits: [...]}, buffers: ["L:C"],
                     conversions: n}}
    buffers: [{at: "file:L:C", loc: "L:C", layout, uses, before, after, ideal}]  (swizzle lines)
    roofline: {name: {flops, mufu, elementwise, dram, accessed, intensity, bound, us, peaks, note}}"""
    rep = {"kernels": {}, "buffers": [], "roofline": {}}
    section, cur, roof = None, None, None
    for line in text.splitlines():
        m = re.match(r"== (.+) ==\s*$", line)
        if m:
            section, cur, roof = m.group(1), None, None
            continue
        if section == "passes":
            m = re.match(r"swizzle: buffer at (\S+?):(\d+):(\d+): (.*)$", line)
            if m:
                body = m.group(4)
                b = {"at": "%s:%s:%s" % m.group(1, 2, 3), "loc": "%s:%s" % m.group(2, 3)}
                w = re.search(r"(\d+) -> (\d+) wavefronts \(ideal (\d+)\)", body)
                if w:
                    b["before"], b["after"], b["ideal"] = (int(x) for x in w.groups())
                lay = re.search(r"\): ([^;]+);", body)
                b["layout"] = lay.group(1) if lay else ""
                b["uses"] = [u.split(":")[0].strip() for u in
                             re.findall(r"(?:^|; |, )([A-Za-z][\w./ ]*?: \d+ wavefronts/instr|"
                                        r"[A-Za-z][\w./ ]*?: \d+ \(was)", body)]
                rep["buffers"].append(b)
        elif section == "code generation":
            m = re.match(r"kernel (\S+) \((\S+)\)", line)
            if m:
                cur = rep["kernels"].setdefault(m.group(1), {"name": m.group(1)})
                cur.setdefault("buffers", [])
                cur.setdefault("conversions", 0)
                continue
            if cur is not None:
                m = re.match(r"\s+shared buffer at (\d+:\d+):", line)
                if m and m.group(1) not in cur["buffers"]:
                    cur["buffers"].append(m.group(1))
                conv = "layout conversion through shared memory" in line
                red = re.search(r"reduce .* via shared memory", line)
                if conv:
                    cur["conversions"] += 1
                if red:
                    cur["smem_reductions"] = cur.get("smem_reductions", 0) + 1
                w = re.search(r"bank model, warp 0: st\.shared (\d+) wavefronts \(ideal (\d+)\), "
                              r"ld\.shared (\d+) \(ideal (\d+)\)", line)
                if w and (conv or red):   # the code generator's bank model of the scratch (warp 0)
                    what = "conversion %d" % cur["conversions"] if conv else "reduction %d" % cur["smem_reductions"]
                    cur["modelled_" + ("conversions" if conv else "reductions")] = \
                        cur.get("modelled_" + ("conversions" if conv else "reductions"), 0) + 1
                    cur.setdefault("xfers", []).extend([
                        {"at": what + " writes", "loc": what + " writes", "layout": "scratch",
                         "uses": ["st.shared"], "after": int(w.group(1)), "ideal": int(w.group(2))},
                        {"at": what + " reads", "loc": what + " reads", "layout": "scratch",
                         "uses": ["ld.shared"], "after": int(w.group(3)), "ideal": int(w.group(4))}])
        elif section == "resources":
            m = re.match(r"kernel (\S+) \((\S+)\)", line)
            if m:
                cur = rep["kernels"].setdefault(m.group(1), {"name": m.group(1), "buffers": [], "conversions": 0})
                cur["arch"] = m.group(2)
                continue
            if cur is None:
                continue
            m = re.match(r"\s+threads: (\d+) per block", line)
            if m:
                cur["threads"] = int(m.group(1))
            m = re.match(r"\s+registers: (\d+) per thread", line)
            if m:
                cur["regs"] = int(m.group(1))
            m = re.match(r"\s+shared memory: (\d+) B dynamic \+ (\d+) B static(?: \+ (\d+) B reserved)?", line)
            if m:
                cur["smem_dynamic"], cur["smem_static"] = int(m.group(1)), int(m.group(2))
                cur["smem_reserved"] = int(m.group(3) or 0)
            m = re.match(r"\s+occupancy: (?:at most )?(\d+) blocks?/SM, (\d+) warps/SM of (\d+), ([\d.]+)%"
                         r"(?:; limited by (.*?))?(?: \(registers not counted\))?$", line)
            if m:
                lim = []
                for part in (m.group(5) or "").split(", and "):
                    key = part.split(":")[0].strip()
                    if key in LIMITS:
                        lim.append(LIMITS[key])
                cur["occupancy"] = {"blocks": int(m.group(1)), "warps": int(m.group(2)),
                                    "max_warps": int(m.group(3)), "pct": float(m.group(4)), "limits": lim,
                                    "upper_bound": "at most" in line}
            elif re.match(r"\s+occupancy: 0 ", line):
                cur["occupancy"] = {"blocks": 0, "warps": 0, "pct": 0.0, "limits": [], "note": line.strip()}
        elif section == "roofline":
            m = re.match(r"kernel (\S+) \((\S+)\)(.*)$", line)
            if m:
                roof = rep["roofline"].setdefault(m.group(1), {"kernel": m.group(1),
                                                               "note": m.group(3).lstrip(", :")})
                continue
            if roof is None:
                continue
            m = re.search(r"tensor cores: (\d+) FLOP", line)
            if m:
                roof["flops"] = int(m.group(1))
            m = re.search(r"MUFU: (\d+) ops; other elementwise: (\d+) ops", line)
            if m:
                roof["mufu"], roof["elementwise"] = int(m.group(1)), int(m.group(2))
            m = re.search(r"global memory: (\d+) B accessed.*DRAM (\d+) B", line)
            if m:
                roof["accessed"], roof["dram"] = int(m.group(1)), int(m.group(2))
            m = re.search(r"intensity: ([\d.]+) FLOP/B of DRAM", line)
            if m:
                roof["intensity"] = float(m.group(1))
            m = re.search(r"peaks: (.*)$", line)
            if m:
                p = m.group(1)
                pk = {"text": p}
                for key, rx in (("sms", r"(\d+) SMs"), ("mhz", r"(\d+) MHz"), ("gbs", r"([\d.]+) GB/s"),
                                ("flop_clk_sm", r"(\d+) FLOP/clk/SM"), ("mufu_clk_sm", r"(\d+) MUFU/clk/SM"),
                                ("smem_clk_sm", r"(\d+) B/clk/SM")):
                    v = re.search(rx, p)
                    if v:
                        pk[key] = float(v.group(1))
                pk["device"] = p.split(",")[0]
                roof["peaks"] = pk
            m = re.search(r"bound: ([^;]+); predicted time ([\d.]+) (\w+)", line)
            if m:
                roof["bound"] = m.group(1).strip()
                roof["us"] = float(m.group(2)) * UNITS_US[m.group(3)]
    return rep


def all_flops(roof):
    """Every FLOP the roofline counts (tensor-core, MUFU, elementwise): the
    numerator of its intensity."""
    return roof.get("flops", 0) + roof.get("mufu", 0) + roof.get("elementwise", 0)


def peak_tflops(peaks):
    """The tensor cores' peak in TFLOP/s from the report's peaks line."""
    return peaks["flop_clk_sm"] * peaks["sms"] * peaks["mhz"] * 1e6 / 1e12


# ---------------------------------------------------------------- ncu's CSV

METRICS_CORE = [
    "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "sm__maximum_warps_per_active_cycle_pct", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps",
    "launch__registers_per_thread", "launch__block_size", "launch__grid_size",
    "launch__shared_mem_per_block_dynamic", "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_driver",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
]
# Asked for where this ncu offers them (and dropped in a second try when
# the first fails): ldmatrix's and cp.async's own counters, and the
# SASS-level wavefronts of shared-memory instructions against their ideal.
METRICS_OPTIONAL = [
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
    "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared.sum",
    "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared_ideal.sum",
    # the profiled device's DRAM peak (bytes a DRAM cycle x DRAM cycles a
    # second): a memory-bound prediction made with another device's peak
    # (the report's `peaks:` line) is rescaled to it
    "dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second",
]
SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
TIME_US = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6, "ns": 1e-3, "us": 1.0, "ms": 1e3,
           "s": 1e6}


def to_number(text, unit=""):
    """A value of ncu's CSV in base units (times in microseconds, bytes in
    bytes, percentages as printed); None for n/a or text."""
    t = (text or "").strip().replace(",", "")
    if t.endswith("%"):
        t = t[:-1]
    try:
        v = float(t)
    except ValueError:
        return None
    u = (unit or "").strip()
    if u in TIME_US:
        return v * TIME_US[u]
    m = re.match(r"([KMGT]?)(byte|B)(/.*)?$", u)
    if m:
        return v * SCALE[m.group(1)]
    m = re.match(r"([KMGT]?)(hz|Hz|cycle/second|cycle/nsecond|cycle/usecond)$", u)
    if m:
        per = {"cycle/nsecond": 1e9, "cycle/usecond": 1e6}.get(m.group(2), 1.0)
        return v * SCALE[m.group(1)] * per
    return v


def parse_ncu_csv(text):
    """Profiled launches of `ncu --csv` text, in profile order: a list of
    {"id", "kernel", "metrics": {name: float}}. Reads the raw page (one
    row per launch, metric columns, a units row under the header) and the
    details page (one row per metric: Metric Name, Metric Unit, Metric
    Value); skips ncu's ==PROF== lines and anything before the header."""
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if line.startswith('"ID"') or line.startswith("ID,"):
            start = i
            break
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(l for l in lines[start:] if not l.startswith("==")))))
    head = rows[0]
    col = {h: i for i, h in enumerate(head)}
    name_col = col.get("Kernel Name", col.get("Function Name"))
    out, by_id = [], {}
    if "Metric Name" in col:     # details page
        for r in rows[1:]:
            if len(r) < len(head):
                continue
            rid = r[col["ID"]]
            if rid not in by_id:
                by_id[rid] = {"id": int(rid) if rid.isdigit() else rid, "kernel": r[name_col], "metrics": {}}
                out.append(by_id[rid])
            v = to_number(r[col["Metric Value"]], r[col.get("Metric Unit", -1)] if "Metric Unit" in col else "")
            if v is not None:
                by_id[rid]["metrics"][r[col["Metric Name"]]] = v
        return out
    units = None
    for r in rows[1:]:
        if len(r) < len(head):
            continue
        if units is None and not r[col["ID"]].strip():
            units = r
            continue
        units = units or [""] * len(head)
        rec = {"id": int(r[col["ID"]]) if r[col["ID"]].isdigit() else r[col["ID"]], "kernel": r[name_col],
               "metrics": {}}
        for h, i in col.items():
            if "__" not in h:
                continue
            v = to_number(r[i], units[i])
            if v is not None:
                rec["metrics"][h] = v
        out.append(rec)
    return out


def parse_source_csv(text):
    """Per profiled launch, in profile order, of ncu's source page
    (`--page source --csv --print-source sass`, the SourceCounters
    section): {"kernel", "wavefronts", "ideal"}, the sums over the
    kernel's SASS instructions of L1 Wavefronts Shared and L1 Wavefronts
    Shared Ideal (each instruction's shared-memory wavefronts and the
    fewest its addresses need). [] for text without such blocks."""
    out, cur, col = [], None, None
    for r in csv.reader(io.StringIO("\n".join(l for l in text.splitlines() if not l.startswith("==")))):
        if len(r) >= 2 and r[0] == "Kernel Name":
            cur, col = {"kernel": r[1], "wavefronts": 0.0, "ideal": 0.0}, None
            out.append(cur)
        elif r and r[0] == "Address" and cur is not None:
            h = {name: i for i, name in enumerate(r)}
            col = (h.get("L1 Wavefronts Shared"), h.get("L1 Wavefronts Shared Ideal"))
            if None in col:
                col = None
        elif cur is not None and col and len(r) > max(col):
            for key, i in zip(("wavefronts", "ideal"), col):
                v = to_number(r[i])
                cur[key] += v or 0.0
    return out


def attach_source(profiled, sources):
    """The source page's SASS-level wavefronts and ideal of each launch as
    its SASS_WF / SASS_IDEAL metrics; returns how many were attached. ncu
    prints a launch's block twice when its module holds more kernels (the
    GEMM's and attention's portable variants): a block equal to the one
    before it is dropped when that makes the blocks as many as the
    launches. Launches whose kernel name differs from the block's are left
    as they are; a count that still differs attaches nothing."""
    if len(sources) != len(profiled):
        once = [b for i, b in enumerate(sources) if i == 0 or b != sources[i - 1]]
        sources = once if len(once) == len(profiled) else sources
    if len(sources) != len(profiled):
        return 0
    n = 0
    for p, s in zip(profiled, sources):
        if p["kernel"] == s["kernel"] and s["wavefronts"] > 0:
            p["metrics"][SASS_WF], p["metrics"][SASS_IDEAL] = s["wavefronts"], s["ideal"]
            n += 1
    return n


# ---------------------------------------------------------------- comparison

# The LSU operation each access kind of the bank-conflict model
# (passes/bank_model.c) issues; TMA writes and wgmma/tcgen05 operand reads
# do not go through the LSU and no shared-memory counter sees them.
USE_OP = {"cp.async 16B": "ldgsts", "st.shared.v4": "st", "ld.shared.v4": "ld", "ldmatrix": "ldsm",
          "ldmatrix.trans": "ldsm", "TMA": None, "wgmma/tcgen05 operand": None,
          "st.shared": "st", "ld.shared": "ld"}
HW = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_%s.sum"
HW_WF = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_%s.sum"
SASS_WF = "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared.sum"
SASS_IDEAL = "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared_ideal.sum"


def device_gbs(m):
    """The profiled device's DRAM peak in GB/s from ncu's peak bytes a DRAM
    cycle and its DRAM clock, or None when ncu gave neither."""
    per_clk, hz = m.get("dram__bytes.sum.peak_sustained"), m.get("dram__cycles_elapsed.avg.per_second")
    if not per_clk or not hz:
        return None
    return per_clk * hz / 1e9


def measured_occupancy(m):
    keys = {"blocks": "launch__occupancy_limit_blocks", "registers": "launch__occupancy_limit_registers",
            "shared memory": "launch__occupancy_limit_shared_mem", "warps": "launch__occupancy_limit_warps"}
    lim = {k: m[v] for k, v in keys.items() if v in m}
    if len(lim) < 4 or "sm__maximum_warps_per_active_cycle_pct" not in m:
        return None
    blocks = min(lim.values())
    return {"blocks": int(blocks), "pct": m["sm__maximum_warps_per_active_cycle_pct"],
            "limits": sorted(k for k, v in lim.items() if v == blocks),
            "achieved_pct": m.get("sm__warps_active.avg.pct_of_peak_sustained_active")}


def conflict_counts(m):
    """Every shared-memory conflict count ncu gave: per LSU op (hardware
    counters) {op: (conflicts, wavefronts)} and the SASS-level
    (wavefronts, ideal) of all shared-memory instructions, or None."""
    ops = {op: (m[HW % op], m[HW_WF % op]) for op in ("ld", "st", "ldsm", "ldgsts")
           if HW % op in m and HW_WF % op in m}
    sass = (m[SASS_WF], m[SASS_IDEAL]) if SASS_WF in m and SASS_IDEAL in m else None
    return ops, sass


def measured_conflicts(m, ops_wanted=None):
    """(percent, source) of excess shared-memory wavefronts. With
    ops_wanted (the LSU ops of the buffers the report predicts), the
    hardware counters of those ops alone where ncu gives them (an op it
    does not count, cp.async's writes on some versions, is left out);
    otherwise the kernel's SASS-level excess over ideal, else its
    hardware ld + st counters. Percent None without wavefronts or
    metrics."""
    ops, sass = conflict_counts(m)
    if ops_wanted:
        have = [op for op in sorted(ops_wanted) if op in ops]
        if have:
            bc = sum(ops[op][0] for op in have)
            wf = sum(ops[op][1] for op in have)
            return (100.0 * bc / wf if wf else None), "l1tex " + "+".join(have)
    if sass:
        return (100.0 * max(sass[0] - sass[1], 0.0) / sass[0] if sass[0] else None), "sass"
    if "ld" in ops and "st" in ops:
        bc, wf = ops["ld"][0] + ops["st"][0], ops["ld"][1] + ops["st"][1]
        return (100.0 * bc / wf if wf else None), "l1tex ld+st"
    return None, None


def bank_result(rep, k, kernel, m):
    """The bank-conflict comparison of one kernel."""
    bufs = {b["loc"]: b for b in rep["buffers"]}
    # the portable variant's pass decisions are not reported (driver/job.c
    # add_portable): the swizzle lines at its buffers' places are the main
    # kernel's, of other tiles
    portable = kernel.startswith("tilec_portable_")
    mine = [] if portable else [bufs[loc] for loc in k.get("buffers", []) if loc in bufs] + k.get("xfers", [])
    ops, sass = conflict_counts(m)
    unmodelled = []
    nconv = k.get("conversions", 0) - k.get("modelled_conversions", 0)
    if nconv > 0:
        unmodelled.append("%d layout conversion%s through shared memory" % (nconv, "s" if nconv > 1 else ""))
    nred = k.get("smem_reductions", 0) - k.get("modelled_reductions", 0)
    if nred > 0:
        unmodelled.append("%d reduction%s across warps through shared memory (ld/st)" % (
            nred, "s" if nred > 1 else ""))
    res = {"buffers": [{"at": b["at"], "layout": b["layout"], "uses": b["uses"], "after": b.get("after"),
                        "ideal": b.get("ideal")} for b in mine],
           "ops": {op: list(v) for op, v in ops.items()}, "sass": list(sass) if sass else None,
           "unmodelled": unmodelled}
    res["kernel_pct"], res["kernel_source"] = measured_conflicts(m)
    if portable:
        res["status"] = "no prediction"
        return res
    if not mine:
        return res
    is_free = lambda b: b.get("after") is not None and b["after"] == b.get("ideal")  # noqa: E731
    free = all(is_free(b) for b in mine)
    res["predicted_free"] = free
    # The LSU ops of the buffers predicted conflict-free, less those that a
    # buffer predicted to conflict also issues (ncu counts per op, not per
    # buffer): what the criterion can check.
    ops_free = {USE_OP.get(u, "other") for b in mine if is_free(b) for u in b["uses"]} - {None}
    ops_bad = {USE_OP.get(u, "other") for b in mine if not is_free(b) for u in b["uses"]} - {None}
    wanted = ops_free - ops_bad
    # predicted against measured excess for the ops only conflicted buffers issue (informational)
    only_bad = sorted(op for op in ops_bad - ops_free if op in ops)
    if only_bad:
        aft = sum(b["after"] for b in mine if not is_free(b) for u in b["uses"] if USE_OP.get(u) in only_bad)
        ide = sum(b["ideal"] for b in mine if not is_free(b) for u in b["uses"] if USE_OP.get(u) in only_bad)
        bc, wf = sum(ops[op][0] for op in only_bad), sum(ops[op][1] for op in only_bad)
        res["conflicted"] = {"ops": only_bad, "predicted_pct": 100.0 * (aft - ide) / aft if aft else None,
                             "measured_pct": 100.0 * bc / wf if wf else None}
    # Every shared-memory access of the kernel modelled and predicted
    # conflict-free: the measure is the kernel's SASS-level excess, each
    # instruction's wavefronts against the ideal for its addresses (wgmma's
    # operand reads included, which no LSU counter sees). The l1tex
    # hardware counters of the same ops are kept beside it: they also count
    # data-bank wavefronts that no instruction's addresses cause (the H200,
    # 2026-12-04: softmax's every LDS and STS at its ideal in ncu's source
    # view, the counters 19,853 of 2,117,005 ld and 7,595 of 269,739 st
    # wavefronts over it, exactly their whole "conflicts").
    if free and not unmodelled and sass and sass[0]:
        res["measured_pct"], res["source"] = 100.0 * max(sass[0] - sass[1], 0.0) / sass[0], "sass"
        hw = sorted(op for op in wanted if op in ops)
        if hw:
            bc, wf = sum(ops[op][0] for op in hw), sum(ops[op][1] for op in hw)
            res["l1tex_pct"] = 100.0 * bc / wf if wf else None
        res["ok"] = res["measured_pct"] < CONFLICT_TOL
        return res
    if not wanted:
        res["status"] = "not observable" if not ops_free and free else "predicted conflicts"
        return res
    pct, src = measured_conflicts(m, wanted - {"other"} if "other" not in wanted else None)
    res["measured_pct"], res["source"] = pct, src
    if pct is None:
        res["status"] = "no data"
    else:
        res["ok"] = pct < CONFLICT_TOL
    return res


def compare(reports, profiled, launches=None, cases=None):
    """One result per launched case and a verdict per criterion.
    reports: {module case name: parse_report(...)}; profiled: parse_ncu_csv
    rows in launch order; launches: [{"case", "kernel"}] as --launch
    recorded them (default: the cases in order, each its own kernel)."""
    cases = cases or CASES
    if launches is None:
        launches = [{"case": c["name"], "kernel": c["kernel"]} for c in cases]
    results, problems = [], []
    for l in launches:
        if l.get("error"):
            problems.append("%s: %s" % (l["case"], l["error"]))
            if not l.get("launched", True):
                results.append({"case": l["case"], "kernel": l["kernel"], "error": "not launched"})
    launches = [l for l in launches if l.get("launched", True)]
    if len(profiled) != len(launches):
        problems.append("ncu profiled %d launches, the driver made %d" % (len(profiled), len(launches)))
    for i, (l, p) in enumerate(zip(launches, profiled)):
        case = BY_NAME[l["case"]]
        checks = case.get("checks", CHECKS)
        rep = reports.get(module_case(case)["name"])
        r = {"case": case["name"], "kernel": l["kernel"], "arch": module_case(case).get("arch", ARCH),
             "ncu_kernel": p["kernel"], "checks": list(checks), "metrics": p["metrics"]}
        results.append(r)
        if p["kernel"] != l["kernel"]:
            problems.append("launch %d: ncu saw %s where %s ran" % (i, p["kernel"], l["kernel"]))
            r["error"] = "kernel mismatch"
            continue
        if rep is None:
            r["error"] = "no report"
            continue
        k = rep["kernels"].get(l["kernel"], {})
        m = p["metrics"]
        po, mo = k.get("occupancy"), measured_occupancy(m)
        r["occupancy"] = {"predicted": po, "measured": mo, "regs_predicted": k.get("regs"),
                          "regs_measured": m.get("launch__registers_per_thread")}
        if "occupancy" in checks and po and mo:
            r["occupancy"]["ok"] = po["blocks"] == mo["blocks"] and abs(po["pct"] - mo["pct"]) <= OCC_TOL
        r["bank"] = bank_result(rep, k, l["kernel"], m)
        if "bank" not in checks:
            r["bank"].pop("ok", None)
        roof = rep["roofline"].get(l["kernel"], {})
        meas_us = m.get("gpu__time_duration.sum")
        dram = None
        if "dram__bytes_read.sum" in m and "dram__bytes_write.sum" in m:
            dram = m["dram__bytes_read.sum"] + m["dram__bytes_write.sum"]
        t = {"bound": roof.get("bound"), "predicted_us": roof.get("us"), "measured_us": meas_us,
             "predicted_dram": roof.get("dram"), "measured_dram": dram, "flops": all_flops(roof) if roof else None,
             "intensity": roof.get("intensity"), "sm_hz": m.get("sm__cycles_elapsed.avg.per_second"),
             "peaks": roof.get("peaks"), "note": roof.get("note", "") if "us" not in roof else ""}
        dev_gbs = device_gbs(m)
        pred_us = roof.get("us")
        if pred_us and roof.get("bound") == "memory bandwidth" and dev_gbs and (roof.get("peaks") or {}).get("gbs"):
            # the report's bandwidth is its target's; the profiled device may have another
            t["device_gbs"] = dev_gbs
            t["report_us"] = pred_us
            pred_us = pred_us * roof["peaks"]["gbs"] / dev_gbs
            t["predicted_us"] = pred_us
        if pred_us and meas_us:
            t["ratio"] = pred_us / meas_us
            if roof.get("bound") in TIME_BOUNDS and "time" in checks:
                t["ok"] = abs(t["ratio"] - 1.0) <= TIME_TOL
        r["time"] = t
    return results, verdicts(results, problems), problems


def verdicts(results, problems):
    def crit(name, key, fmt):
        checked = [r for r in results if r.get(key, {}).get("ok") is not None]
        bad = [r for r in checked if not r[key]["ok"]]
        ok = bool(checked) and not bad and not problems
        text = fmt(checked, bad)
        if not checked:
            text += "; no kernel checked"
        if problems:   # a run with a problem passes nothing: say which, here
            text += "; and %d problem%s in the run: %s" % (len(problems), "s" if len(problems) > 1 else "",
                                                           " | ".join(problems))
        return {"criterion": name, "ok": ok, "checked": len(checked), "failed": [r["case"] for r in bad],
                "text": text}

    def occ(c, b):
        return "%d of %d kernels identical%s" % (len(c) - len(b), len(c), "; differ: " + ", ".join(
            "%s (report %d blocks/SM %.1f%%, ncu %d %.1f%%)" % (
                r["case"], r["occupancy"]["predicted"]["blocks"], r["occupancy"]["predicted"]["pct"],
                r["occupancy"]["measured"]["blocks"], r["occupancy"]["measured"]["pct"]) for r in b) if b else "")

    def bank(c, b):
        text = "%d kernels with every buffer predicted conflict-free checked" % len(c)
        if b:
            text += "; 1% or more: " + ", ".join("%s %.2f%% (%s)" % (
                r["case"], r["bank"]["measured_pct"], r["bank"]["source"]) for r in b)
        elif c:
            worst = max(c, key=lambda r: r["bank"]["measured_pct"])
            text += " (worst %s %.3f%%)" % (worst["case"], worst["bank"]["measured_pct"])
        for status in ("not observable", "no data", "predicted conflicts"):
            names = [r["case"] for r in results if r.get("bank", {}).get("status") == status]
            if names:
                text += "; %s: %s" % (status + {"not observable": " (TMA writes and wgmma reads only)",
                                                 "predicted conflicts": " (every op observed also serves a "
                                                 "buffer predicted to conflict)"}.get(status, ""), ", ".join(names))
        return text

    def tm(c, b):
        return "%d of %d kernels bound by memory or integer multiplies within 25%%%s" % (
            len(c) - len(b), len(c), "; outside: " + ", ".join(
            "%s (predicted %.1f us, measured %.1f us, %.2f)" % (
                r["case"], r["time"]["predicted_us"], r["time"]["measured_us"], r["time"]["ratio"])
            for r in b) if b else "")

    return [crit("occupancy identical", "occupancy", occ),
            crit("bank conflicts under 1% where predicted conflict-free", "bank", bank),
            crit("predicted time within 25% for kernels bound by memory or integer multiplies", "time", tm)]


def fmt_table(results):
    out = []
    row = "%-18s %-20s | %-22s %-22s %-4s | %-7s %-8s %-6s %-8s | %-17s %8s %8s %5s %-4s | %7s %7s"
    hdr = row % ("case", "kernel", "occupancy report", "occupancy ncu", "", "buffers", "conflict", "",
                 "kernel", "bound", "pred us", "meas us", "ratio", "", "DRAM MB", "meas MB")
    out.append(hdr)
    out.append("-" * len(hdr))
    for r in results:
        if "error" in r:
            out.append("%-18s %-20s %s" % (r["case"], r["kernel"], r["error"]))
            continue
        o, b, t = r["occupancy"], r["bank"], r["time"]
        po, mo = o["predicted"], o["measured"]
        lim = lambda x: "/".join(v[:4] for v in x["limits"])  # noqa: E731
        ps = "%d blk %.1f%% %s" % (po["blocks"], po["pct"], lim(po)) if po else "-"
        ms = "%d blk %.1f%% %s" % (mo["blocks"], mo["pct"], lim(mo)) if mo else "-"
        ok = lambda d: "" if d.get("ok") is None else ("ok" if d["ok"] else "FAIL")  # noqa: E731
        nb = len(b["buffers"])
        bs = ("%d free" % nb if b.get("predicted_free") else "%d confl" % nb) if nb else "-"
        pct = lambda v: "%.3f%%" % v if v is not None else "-"  # noqa: E731
        st = ok(b) or {"not observable": "n/obs", "no prediction": "-", "no data": "nodata",
                       "predicted conflicts": "confl"}.get(b.get("status"), "")
        out.append(row % (
            r["case"][:18], r["kernel"][:20], ps, ms, ok(o), bs, pct(b.get("measured_pct")), st,
            pct(b.get("kernel_pct")), (t["bound"] or t["note"] or "-")[:17],
            "%.1f" % t["predicted_us"] if t["predicted_us"] else "-",
            "%.1f" % t["measured_us"] if t["measured_us"] else "-",
            "%.2f" % t["ratio"] if "ratio" in t else "-", ok(t),
            "%.1f" % (t["predicted_dram"] / 1e6) if t["predicted_dram"] else "-",
            "%.1f" % (t["measured_dram"] / 1e6) if t["measured_dram"] else "-"))
    return "\n".join(out)


def load_reports(d=DIR):
    reps = {}
    for c in CASES:
        p = os.path.join(d, c["name"] + ".report")
        if "module" not in c and os.path.exists(p):
            with open(p) as f:
                reps[c["name"]] = parse_report(f.read())
    return reps


# ---------------------------------------------------------------- GPU side

def make_args(case, torch):
    """The launch's arguments on the GPU (the case's dims)."""
    c = module_case(case)
    d = c.get("dims", {})
    dev = "cuda"
    bf = torch.bfloat16
    f32 = torch.float32
    name = case.get("inputs", case["name"])   # a case on another arch takes its twin's arguments
    if name == "vector_add":
        n = d["N"]
        return [torch.randn(n, device=dev), torch.randn(n, device=dev), torch.empty(n, device=dev)]
    if name in ("softmax", "layernorm"):
        x = torch.randn(d["M"], d["N"], device=dev).to(bf)
        y = torch.empty_like(x)
        if name == "softmax":
            return [x, y]
        return [x, torch.randn(d["N"], device=dev).to(bf), torch.randn(d["N"], device=dev).to(bf), y, 1e-5]
    if name == "row_sum":
        return [torch.randn(d["M"], d["N"], device=dev), torch.empty(d["M"], device=dev)]
    if name == "partial_sum":
        return [torch.randn(d["N"], device=dev), torch.empty(d["NB"], device=dev)]
    if name == "transpose":
        return [torch.randn(d["M"], d["N"], device=dev), torch.empty(d["N"], d["M"], device=dev)]
    if name == "cumsum":
        return [torch.randn(d["M"], d["N"], device=dev), torch.empty(d["M"], d["N"], device=dev)]
    if name == "dropout":
        return [torch.randn(d["N"], device=dev), torch.empty(d["N"], device=dev), 0.1, 1234]
    if name in ("gather_rows", "scatter_rows"):
        dd = 256
        ids = torch.randperm(d["N"], device=dev).to(torch.int32)   # V == N: every row once
        src = torch.randn(d["V"] if name == "gather_rows" else d["N"], dd, device=dev).to(bf)
        dst = torch.empty(d["N"] if name == "gather_rows" else d["V"], dd, device=dev, dtype=bf)
        return [src, ids, dst]
    if name in ("gemm", "gemm_portable"):
        return [torch.randn(d["M"], d["K"], device=dev).to(bf), torch.randn(d["K"], d["N"], device=dev).to(bf),
                torch.empty(d["M"], d["N"], device=dev, dtype=bf)]
    if name in ("attention", "attention_portable"):
        z, h, hk, n, nk = d["Z"], d["H"], d["HK"], d["N"], d["NK"]
        dh = int(c["defines"]["D"])
        q = torch.randn(z, h, n, dh, device=dev).to(bf)
        k = torch.randn(z, hk, nk, dh, device=dev).to(bf)
        v = torch.randn(z, hk, nk, dh, device=dev).to(bf)
        return [q, k, v, torch.empty_like(q), torch.empty(z, h, n, device=dev, dtype=f32), dh ** -0.5]
    raise KeyError(name)


def launch(names, d, record):
    """Launch each case's kernel once (run under ncu), recording what ran:
    a case that fails is recorded with its error (and whether its kernel
    was launched, so that the profile's launches still line up) and the
    others go on; the record is rewritten after each case."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import tilec
    mods, done = {}, []
    for name in names:
        case = BY_NAME[name]
        mc = module_case(case)
        rec = {"case": name, "kernel": case["kernel"], "reason": "", "launched": False}
        args = None
        try:
            if mc["name"] not in mods:
                mods[mc["name"]] = tilec.load_files(os.path.join(d, mc["name"] + ".ptx"))
            k = mods[mc["name"]][case["kernel"]]
            args = make_args(case, torch)
            torch.cuda.synchronize()
            k(*args)
            rec["launched"] = True
            torch.cuda.synchronize()
            if k.last_variant:
                rec["kernel"], rec["reason"] = k.last_variant
            print("launched %-20s %s" % (name, rec["kernel"]), flush=True)
        except Exception as e:  # noqa: BLE001 - record it and go on to the next case
            rec["error"] = repr(e)[:400]
            print("FAILED %-20s %s" % (name, rec["error"]), flush=True)
        done.append(rec)
        with open(record, "w") as f:
            json.dump(done, f, indent=1)
        del args
        torch.cuda.empty_cache()


def available_metrics(ncu):
    """Base names ncu lists for device 0, or None when the query fails."""
    try:
        r = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = set(re.findall(r"^(\w+__\w+)", r.stdout, re.M))
    return names if len(names) > 50 else None


def run_ncu(ncu, names, out, d):
    """One ncu process over the launch driver; returns (csv text, launches, log)."""
    have = available_metrics(ncu)
    metrics = METRICS_CORE + METRICS_OPTIONAL
    dropped = []
    if have is not None:   # the optional metrics this ncu lists for the device; the core ones always
        dropped = [m for m in METRICS_OPTIONAL if m.split(".")[0] not in have]
        metrics = [m for m in metrics if m not in dropped]
    kernels = sorted({BY_NAME[n]["kernel"] for n in names})
    rep = os.path.join(out, "validate")
    record = os.path.join(out, "validate_launches.json")
    log = ""
    for stale in (rep + ".ncu-rep", record):
        if os.path.exists(stale):
            os.remove(stale)
    # A try that fails drops the optional metrics its output names (ncu:
    # "Failed to find metric NAME"), or all of them when it names none;
    # the core metrics are never dropped.
    for _ in range(4):
        cmd = [ncu, "--metrics", ",".join(metrics), "--section", "SourceCounters",
               "-k", "regex:^(%s)$" % "|".join(kernels),
               "--clock-control", "none", "-f", "-o", rep,
               sys.executable, os.path.abspath(__file__), "--launch", "--dir", d, "--record", record,
               "--only", ",".join(names)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        log += "$ %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr)
        if r.returncode == 0 and os.path.exists(rep + ".ncu-rep"):
            break
        opt = [m for m in metrics if m in METRICS_OPTIONAL]
        if not opt:
            break
        named = [m for m in opt if m in r.stdout + r.stderr or m.split(".")[0] in r.stdout + r.stderr]
        dropped += named or opt
        metrics = [m for m in metrics if m not in (named or opt)]
    if dropped:
        log += "metrics left out (not offered by this ncu or device): %s\n" % ", ".join(sorted(set(dropped)))
    if not os.path.exists(rep + ".ncu-rep") or not os.path.exists(record):
        return None, None, log + ("" if os.path.exists(record) else "the launch driver wrote no record\n")
    r = subprocess.run([ncu, "--import", rep + ".ncu-rep", "--csv", "--page", "raw", "--print-units", "base"],
                       capture_output=True, text=True)
    log += r.stderr
    src = subprocess.run([ncu, "--import", rep + ".ncu-rep", "--csv", "--page", "source", "--print-source", "sass"],
                         capture_output=True, text=True)
    log += src.stderr
    with open(os.path.join(out, "validate_source.csv"), "w") as f:
        f.write(src.stdout)
    with open(record) as f:
        launches = json.load(f)
    return r.stdout, launches, log


def report(results, verdict, problems, out):
    print(fmt_table(results))
    print()
    print("occupancy: theoretical blocks/SM, % and the limiting resources (regi = registers, shar = shared memory,\n"
          "  warp = threads, bloc = block slots); buffers: the kernel's shared buffers with a prediction (free: "
          "every one\n  conflict-free); conflict: excess wavefronts of the ops that access them; kernel: of all its "
          "shared-memory\n  instructions; ratio: predicted / measured time; cases on sm_86 PTX compare bank "
          "conflicts only")
    for r in results:
        b = r.get("bank", {})
        notes = []
        if b.get("source"):
            notes.append("conflicts from " + b["source"])
        if b.get("unmodelled"):
            notes.append("not modelled: " + ", ".join(b["unmodelled"]))
        if b.get("l1tex_pct") is not None:
            notes.append("l1tex counters of the same ops %.2f%% (data-bank wavefronts no address causes)" %
                         b["l1tex_pct"])
        if b.get("ops"):
            notes.append("l1tex " + ", ".join("%s %d/%d" % (op, c, w) for op, (c, w) in sorted(b["ops"].items())))
        if b.get("sass"):
            notes.append("sass wavefronts %d, ideal %d" % tuple(b["sass"]))
        cf = b.get("conflicted")
        if cf:
            notes.append("predicted to conflict (%s): %s excess predicted, %s measured" % (
                "+".join(cf["ops"]), "%.1f%%" % cf["predicted_pct"] if cf["predicted_pct"] is not None else "?",
                "%.1f%%" % cf["measured_pct"] if cf["measured_pct"] is not None else "?"))
        t = r.get("time", {})
        if t.get("sm_hz"):
            notes.append("SM clock %.0f MHz" % (t["sm_hz"] / 1e6))
        o = r.get("occupancy", {})
        if o.get("regs_measured") is not None and o.get("regs_predicted") is not None and \
                o["regs_measured"] != o["regs_predicted"]:
            notes.append("registers: report %d, driver %d" % (o["regs_predicted"], o["regs_measured"]))
        if notes:
            print("  %-18s %s" % (r["case"], "; ".join(notes)))
    print()
    for p in problems:   # beside the verdicts, which a problem fails: the end of the log shows both
        print("PROBLEM", p)
    for v in verdict:
        print("%s %s: %s" % ("PASS" if v["ok"] else "FAIL", v["criterion"], v["text"]))
    if out:
        with open(os.path.join(out, "validate.json"), "w") as f:
            json.dump({"arch": ARCH, "results": results, "verdicts": verdict, "problems": problems}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prepare", metavar="TILEC", help="compile the cases (build machine)")
    ap.add_argument("--launch", action="store_true", help="launch each case once (run under ncu)")
    ap.add_argument("--compare", metavar="CSV", help="compare a saved ncu CSV with the reports (no GPU)")
    ap.add_argument("--launches", metavar="JSON", help="with --compare: what the driver launched")
    ap.add_argument("--source", metavar="CSV", help="with --compare: the saved source page (validate_source.csv)")
    ap.add_argument("--dir", default=DIR, help="the prepared files (default .devcarry/validate)")
    ap.add_argument("--record", help="with --launch: where to write what ran")
    ap.add_argument("--only", help="comma-separated case names")
    ap.add_argument("--out", default=os.environ.get("OUT", os.path.join(ROOT, "bench-out")))
    ap.add_argument("--ncu", default="ncu")
    a = ap.parse_args()
    names = a.only.split(",") if a.only else [c["name"] for c in CASES]
    if a.prepare:
        prepare(a.prepare, a.dir)
        return 0
    if a.launch:
        launch(names, a.dir, a.record or os.path.join(a.out, "validate_launches.json"))
        return 0
    os.makedirs(a.out, exist_ok=True)
    reps = load_reports(a.dir)
    if not reps:
        print("no reports in %s (run bench/prepare.sh on the build machine)" % a.dir)
        return 2
    if a.compare:
        with open(a.compare) as f:
            text = f.read()
        launches = json.load(open(a.launches)) if a.launches else [
            {"case": n, "kernel": BY_NAME[n]["kernel"]} for n in names]
    else:
        t0 = time.time()
        text, launches, log = run_ncu(a.ncu, names, a.out, a.dir)
        with open(os.path.join(a.out, "validate_ncu.log"), "w") as f:
            f.write(log)
        print("ncu: %.0f s (log: %s)" % (time.time() - t0, os.path.join(a.out, "validate_ncu.log")))
        if text is None:
            print(log[-3000:])
            print("FAIL ncu produced no report")
            return 2
        with open(os.path.join(a.out, "validate_ncu.csv"), "w") as f:
            f.write(text)
    profiled = parse_ncu_csv(text)
    spath = a.source if a.compare else os.path.join(a.out, "validate_source.csv")
    if spath and os.path.exists(spath):
        with open(spath) as f:
            attached = attach_source(profiled, parse_source_csv(f.read()))
        print("source page: SASS-level shared-memory wavefronts of %d of %d launches" % (attached, len(profiled)))
    results, verdict, problems = compare(reps, profiled, launches)
    report(results, verdict, problems, a.out)
    return 0 if all(v["ok"] for v in verdict) else 1


if __name__ == "__main__":
    sys.exit(main())
