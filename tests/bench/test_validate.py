#!/usr/bin/env python3
"""Tests of the GPU validation scripts that need no GPU (plain python3):
bench/validate_report.py (the report's parser, ncu's CSV parser on
tests/bench/data/ncu_raw_sample.csv, the comparison's verdicts on the
recorded reports tests/bench/data/*.report), bench/lineinfo_check.py (its
verdicts on memcheck's report layout; the seeded kernel's .loc line from
the tilec command), bench/interp_check.py (the output comparison; with
libtilec built, --prepare into a temporary folder and --dry-run against
plain-Python references), bench/sass_pc.py (SASS offsets to PTX and .tile
lines, checked against the PTX's own .loc lines; the log's findings per
file), bench/sass_ops.py (instruction words of the D = 128 sm_90a attention
as the device's disassembly printed them, decoded; its learning from a
listing) and bench/charts.py's parsers on the recorded
outputs bench/attn_results_h200.txt and bench/gemm_results_h200.txt.

    python3 tests/bench/test_validate.py [TILEC]     (TILEC: the tilec command; ctest passes it)

Parts that need the tilec command or libtilec are skipped, with a line
saying so, when they are not built. Ends with "N passed, M failed"; exit
status 1 on a failure.
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
DATA = os.path.join(HERE, "data")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import charts  # noqa: E402
import interp_check as IC  # noqa: E402
import lineinfo_check as LC  # noqa: E402
import sass_ops as SO  # noqa: E402
import sass_pc as SP  # noqa: E402
import validate_report as V  # noqa: E402

passed, failed = 0, 0


def check(name, cond, detail=""):
    global passed, failed
    print("%s %s%s" % ("ok  " if cond else "FAIL", name, (": " + str(detail)) if detail and not cond else ""))
    passed += bool(cond)
    failed += not cond


def report(name):
    with open(os.path.join(DATA, name + ".report")) as f:
        return V.parse_report(f.read())


LAUNCHES = [{"case": "vector_add", "kernel": "vector_add"}, {"case": "softmax", "kernel": "softmax"},
            {"case": "gemm", "kernel": "gemm"}, {"case": "gemm_portable", "kernel": "tilec_portable_gemm"},
            {"case": "gemm_sm86", "kernel": "gemm"}]


def test_parse_report():
    r = report("vector_add")
    k = r["kernels"]["vector_add"]
    check("report: vector_add occupancy", k["occupancy"]["blocks"] == 20 and k["occupancy"]["pct"] == 62.5 and
          k["occupancy"]["limits"] == ["registers"] and k["regs"] == 43 and k["threads"] == 64, k)
    roof = r["roofline"]["vector_add"]
    check("report: vector_add roofline", roof["dram"] == 3 * 4 * (1 << 28) and roof["bound"] == "memory bandwidth"
          and abs(roof["us"] - 671.1) < 1e-9 and roof["peaks"]["gbs"] == 4800 and roof["peaks"]["sms"] == 132, roof)
    r = report("gemm")
    check("report: gemm kernels", sorted(r["kernels"]) == ["gemm", "tilec_portable_gemm"], sorted(r["kernels"]))
    g = r["kernels"]["gemm"]
    check("report: gemm occupancy and limits", g["occupancy"]["blocks"] == 1 and g["occupancy"]["pct"] == 18.8 and
          g["occupancy"]["limits"] == ["registers", "shared memory"] and g["smem_dynamic"] == 217216, g)
    check("report: gemm buffers", [(b["loc"], b["after"], b["ideal"], b["uses"]) for b in r["buffers"]] ==
          [("17:33", 512, 512, ["TMA", "wgmma/tcgen05 operand"]), ("18:33", 256, 256, ["TMA", "wgmma/tcgen05 operand"])],
          r["buffers"])
    check("report: gemm's buffers and conversion", g["buffers"] == ["17:33", "18:33"] and g["conversions"] == 1, g)
    check("report: gemm roofline", r["roofline"]["gemm"]["bound"] == "tensor cores" and
          r["roofline"]["gemm"]["flops"] == 2 * 4096 ** 3 and "tilec_portable_gemm" not in r["roofline"])
    check("report: peak TFLOP/s", abs(V.peak_tflops(r["roofline"]["gemm"]["peaks"]) - 4096 * 132 * 1.98e9 / 1e12)
          < 1e-9)
    r = report("gemm_sm86")
    check("report: sm_86 buffers' uses", [b["uses"] for b in r["buffers"]] ==
          [["cp.async 16B", "ldmatrix"], ["cp.async 16B", "ldmatrix.trans"]], r["buffers"])
    check("report: occupancy 0", r["kernels"]["gemm"]["occupancy"]["blocks"] == 0)
    check("report: microseconds from ms", abs(r["roofline"]["gemm"]["us"] - 1931.0) < 1e-6)


def test_parse_csv():
    rows = V.parse_ncu_csv(open(os.path.join(DATA, "ncu_raw_sample.csv")).read())
    check("csv: five launches in order", [r["kernel"] for r in rows] ==
          ["vector_add", "softmax", "gemm", "tilec_portable_gemm", "gemm"], [r["kernel"] for r in rows])
    m = rows[0]["metrics"]
    check("csv: nanoseconds to microseconds, thousands separators",
          abs(m["gpu__time_duration.sum"] - 780.448) < 1e-9 and m["dram__bytes_read.sum"] == 2147612416, m)
    check("csv: percentages and launch counts", m["sm__maximum_warps_per_active_cycle_pct"] == 62.5 and
          m["launch__occupancy_limit_registers"] == 20)
    details = ('==PROF== Connected to process 7\n'
               '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
               '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
               '"0","7","python3","h","softmax","1","7","(512, 1, 1)","(8192, 1, 1)","0","9.0",'
               '"Command line profiler metrics","gpu__time_duration.sum","usecond","160.03"\n'
               '"0","7","python3","h","softmax","1","7","(512, 1, 1)","(8192, 1, 1)","0","9.0",'
               '"Command line profiler metrics","dram__bytes_read.sum","Mbyte","268.48"\n'
               '"1","7","python3","h","gemm","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0",'
               '"Command line profiler metrics","gpu__time_duration.sum","msecond","0.19"\n'
               '"1","7","python3","h","gemm","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0",'
               '"Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","n/a"\n')
    d = V.parse_ncu_csv(details)
    check("csv: details page", [r["kernel"] for r in d] == ["softmax", "gemm"] and
          abs(d[0]["metrics"]["gpu__time_duration.sum"] - 160.03) < 1e-9 and
          abs(d[0]["metrics"]["dram__bytes_read.sum"] - 268.48e6) < 1 and
          abs(d[1]["metrics"]["gpu__time_duration.sum"] - 190.0) < 1e-9 and
          "sm__warps_active.avg.pct_of_peak_sustained_active" not in d[1]["metrics"], d)
    check("csv: nothing without a header", V.parse_ncu_csv("==PROF== no kernels were profiled\n") == [])


def compare(rows, launches=LAUNCHES):
    reps = {n: report(n) for n in ("vector_add", "softmax", "gemm", "gemm_sm86")}
    return V.compare(reps, rows, copy.deepcopy(launches))


def test_compare():
    rows = V.parse_ncu_csv(open(os.path.join(DATA, "ncu_raw_sample.csv")).read())
    res, verdict, problems = compare(rows)
    by = {r["case"]: r for r in res}
    v = {x["criterion"].split()[0]: x for x in verdict}
    check("compare: no problems", problems == [], problems)
    check("compare: occupancy identical on the sm_90a kernels",
          v["occupancy"]["ok"] and v["occupancy"]["checked"] == 4, v["occupancy"])
    check("compare: sm_86 case's occupancy not compared", by["gemm_sm86"]["occupancy"].get("ok") is None)
    check("compare: TMA/wgmma buffers not observable", by["gemm"]["bank"].get("status") == "not observable" and
          "ok" not in by["gemm"]["bank"], by["gemm"]["bank"])
    check("compare: portable kernel has no prediction", by["gemm_portable"]["bank"].get("status") == "no prediction"
          and by["gemm_portable"]["bank"]["buffers"] == [])
    b = by["gemm_sm86"]["bank"]
    check("compare: ldmatrix and cp.async counters for the sm_86 buffers, conversions left out",
          b["source"] == "l1tex ldgsts+ldsm" and abs(b["measured_pct"] - 100.0 * 1024 / (536870912 + 134217728))
          < 1e-9 and b["ok"] and b["kernel_pct"] > 0.1, b)
    check("compare: bank verdict", v["bank"]["ok"] and v["bank"]["checked"] == 1, v["bank"])
    t = by["softmax"]["time"]
    check("compare: softmax 0.70 of measured fails the 25% rule", t["ok"] is False and abs(t["ratio"] - 111.8 / 160.032)
          < 1e-9, t)
    check("compare: vector_add within 25%", by["vector_add"]["time"]["ok"] is True)
    check("compare: tensor-bound kernels not timed", by["gemm"]["time"].get("ok") is None and
          "ratio" in by["gemm"]["time"])
    check("compare: time verdict fails", not v["predicted"]["ok"] and v["predicted"]["failed"] == ["softmax"] and
          "softmax (predicted 111.8 us, measured 160.0 us, 0.70)" in v["predicted"]["text"], v["predicted"])
    # an occupancy the report does not predict, and conflicts over 1%
    bad = copy.deepcopy(rows)
    bad[1]["metrics"]["launch__occupancy_limit_registers"] = 2
    bad[1]["metrics"]["sm__maximum_warps_per_active_cycle_pct"] = 50.0
    bad[4]["metrics"][V.HW % "ldsm"] = 0.02 * bad[4]["metrics"][V.HW_WF % "ldsm"]
    bad[0]["metrics"]["gpu__time_duration.sum"] = 600.0
    res, verdict, problems = compare(bad)
    v = {x["criterion"].split()[0]: x for x in verdict}
    check("compare: occupancy difference fails", not v["occupancy"]["ok"] and v["occupancy"]["failed"] == ["softmax"]
          and "softmax (report 3 blocks/SM 75.0%, ncu 2 50.0%)" in v["occupancy"]["text"], v["occupancy"])
    check("compare: conflicts over 1% fail", not v["bank"]["ok"] and v["bank"]["failed"] == ["gemm_sm86"], v["bank"])
    check("compare: predicted above measured within 25% passes", [r for r in res if r["case"] == "vector_add"][0]
          ["time"]["ok"] is True)
    # profiled on a device with 0.7 of the report's DRAM peak: the
    # memory-bound prediction is rescaled to it, the tensor-bound one not
    slow = copy.deepcopy(rows)
    gbs = {r["case"]: r["time"]["peaks"]["gbs"] for r in compare(rows)[0] if r["time"].get("peaks")}
    for row in slow:
        row["metrics"]["dram__bytes.sum.peak_sustained"] = 64.0
        row["metrics"]["dram__cycles_elapsed.avg.per_second"] = 0.7 * gbs["softmax"] * 1e9 / 64.0
    res, verdict, problems = compare(slow)
    by = {r["case"]: r for r in res}
    t = by["softmax"]["time"]
    check("compare: memory-bound prediction rescaled to the profiled device's DRAM peak",
          abs(t["device_gbs"] - 0.7 * gbs["softmax"]) < 1e-6 and abs(t["predicted_us"] - 111.8 / 0.7) < 0.2
          and t["report_us"] == 111.8 and t["ok"] is True, t)
    check("compare: tensor-bound prediction not rescaled", "device_gbs" not in by["gemm"]["time"], by["gemm"]["time"])
    # the launches ncu saw do not match what the driver ran
    res, verdict, problems = compare(rows[:4])
    check("compare: a missing launch is a problem and fails every criterion",
          problems and not any(x["ok"] for x in verdict), problems)
    sw = copy.deepcopy(LAUNCHES)
    sw[0], sw[1] = sw[1], sw[0]
    res, verdict, problems = compare(rows, sw)
    check("compare: kernel names out of order", len(problems) == 2 and res[0].get("error") == "kernel mismatch",
          problems)
    # a case that failed before its launch: the others still line up
    failed = copy.deepcopy(LAUNCHES)
    failed.insert(1, {"case": "layernorm", "kernel": "layernorm", "launched": False, "error": "CUDA out of memory"})
    res, verdict, problems = compare(rows, failed)
    check("compare: a case not launched is a problem, the rest line up",
          problems == ["layernorm: CUDA out of memory"] and [r.get("error") for r in res].count("not launched") == 1
          and [r["case"] for r in res if "error" not in r] == [l["case"] for l in LAUNCHES] and
          not any(x["ok"] for x in verdict), problems)
    # no metrics at all: nothing passes
    empty = [{"id": r["id"], "kernel": r["kernel"], "metrics": {}} for r in rows]
    res, verdict, problems = compare(empty)
    check("compare: no metrics, no pass", not any(x["ok"] for x in verdict), verdict)
    text = V.fmt_table(compare(rows)[0])
    check("compare: table", "vector_add" in text and "FAIL" in text and "n/obs" in text, text)


def test_conversions_problems_imul():
    """The code generator's bank model of a conversion's scratch: parsed,
    checked on op_st / op_ld where predicted conflict-free, left out of the
    check (and compared, informationally) where predicted to conflict;
    problems named in every verdict line; the integer-multiply bound timed."""
    rows = V.parse_ncu_csv(open(os.path.join(DATA, "ncu_raw_sample.csv")).read())
    with open(os.path.join(DATA, "gemm_sm86.report")) as f:
        text = f.read()
    conv = "(4-byte writes, 16-byte reads)"
    free = V.parse_report(text.replace(conv, conv + "; bank model, warp 0: st.shared 64 wavefronts (ideal 64), "
                                       "ld.shared 64 (ideal 64)"))
    x = free["kernels"]["gemm"].get("xfers", [])
    check("conversion: writes and reads parsed", [(b["uses"], b["after"], b["ideal"]) for b in x] ==
          [(["st.shared"], 64, 64), (["ld.shared"], 64, 64)], x)
    m = dict(rows[4]["metrics"])
    m[V.HW % "st"], m[V.HW_WF % "st"], m[V.HW % "ld"], m[V.HW_WF % "ld"] = 0.0, 1000.0, 0.0, 1000.0
    b = V.bank_result(free, free["kernels"]["gemm"], "gemm", m)
    check("everything modelled and predicted free: the SASS-level excess decides, the l1tex ops beside it",
          b["source"] == "sass" and b["ok"] and b["unmodelled"] == [] and
          abs(b["measured_pct"] - 100.0 * (m[V.SASS_WF] - m[V.SASS_IDEAL]) / m[V.SASS_WF]) < 1e-9 and
          b["l1tex_pct"] is not None, b)
    for k in (V.SASS_WF, V.SASS_IDEAL):
        m.pop(k)
    b = V.bank_result(free, free["kernels"]["gemm"], "gemm", m)
    check("conversion predicted free, no SASS-level counters: its ops join the l1tex check",
          b["source"] == "l1tex ld+ldgsts+ldsm+st" and b["ok"] and b["unmodelled"] == [], b)
    confl = V.parse_report(text.replace(conv, conv + "; bank model, warp 0: st.shared 128 wavefronts (ideal 64), "
                                        "ld.shared 64 (ideal 64)"))
    m[V.HW % "st"] = 900.0
    b = V.bank_result(confl, confl["kernels"]["gemm"], "gemm", m)
    check("conversion writes predicted to conflict: st left out of the check, excess beside the measured",
          b["source"] == "l1tex ld+ldgsts+ldsm" and b["ok"] and not b["predicted_free"] and
          b["conflicted"]["ops"] == ["st"] and b["conflicted"]["predicted_pct"] == 50.0 and
          abs(b["conflicted"]["measured_pct"] - 90.0) < 1e-9, b)
    only = V.parse_report(text.replace(conv, conv + "; bank model, warp 0: st.shared 128 wavefronts (ideal 64), "
                                       "ld.shared 128 (ideal 64)"))
    for buf in only["buffers"]:   # as on sm_90a: TMA writes, wgmma reads
        buf["uses"] = ["TMA", "wgmma/tcgen05 operand"]
    b = V.bank_result(only, only["kernels"]["gemm"], "gemm", m)
    check("every observable op predicted to conflict: not checked, said so", b.get("status") == "predicted conflicts"
          and "ok" not in b, b)
    soft = report("softmax")["kernels"]["softmax"]
    b = V.bank_result(report("softmax"), soft, "softmax", rows[1]["metrics"])
    check("reductions through shared memory named as unmodelled",
          b["unmodelled"] == ["2 reductions across warps through shared memory (ld/st)"], b)
    with open(os.path.join(DATA, "softmax.report")) as f:
        stext = f.read()
    model = "; bank model, warp 0: st.shared 1 wavefronts (ideal 1), ld.shared 16 (ideal 16)"
    srep = V.parse_report(re.sub(r"(reduce .* via shared memory -> .*)", lambda mm: mm.group(1) + model, stext))
    sk = srep["kernels"]["softmax"]
    sm = dict(rows[1]["metrics"])
    sm[V.HW % "st"], sm[V.HW_WF % "st"], sm[V.HW % "ld"], sm[V.HW_WF % "ld"] = 0.0, 2048.0, 4.0, 32768.0
    b = V.bank_result(srep, sk, "softmax", sm)
    check("modelled reductions: the SASS-level excess (none), the l1tex counters of ld and st beside it",
          len(sk["xfers"]) == 4 and b["unmodelled"] == [] and b["ok"] and b["source"] == "sass" and
          b["measured_pct"] == 0.0 and abs(b["l1tex_pct"] - 100.0 * 4 / (2048 + 32768)) < 1e-9, b)
    sm[V.SASS_WF], sm[V.SASS_IDEAL] = 34000.0, 32768.0
    b = V.bank_result(srep, sk, "softmax", sm)
    check("modelled reductions: SASS-level excess of 1% or more fails",
          b["ok"] is False and abs(b["measured_pct"] - 100.0 * 1232 / 34000) < 1e-9, b)
    for k in (V.SASS_WF, V.SASS_IDEAL):
        sm.pop(k)
    b = V.bank_result(srep, sk, "softmax", sm)
    check("modelled reductions without SASS-level counters: checked on st/ld",
          b["ok"] and b["source"] == "l1tex ld+st" and abs(b["measured_pct"] - 100.0 * 4 / (2048 + 32768)) < 1e-9,
          b)
    # a problem fails every verdict, and every verdict line names it
    res, verdict, problems = compare(rows[:4])
    check("problems named in each verdict line", problems and all(
        "problem" in v["text"] and problems[0] in v["text"] for v in verdict), [v["text"] for v in verdict])
    # the integer multipliers' bound is timed like memory's
    reps = {n: report(n) for n in ("vector_add", "softmax", "gemm", "gemm_sm86")}
    reps["softmax"]["roofline"]["softmax"]["bound"] = "integer multiplies"
    res, verdict, problems = V.compare(reps, rows, copy.deepcopy(LAUNCHES))
    t = [r for r in res if r["case"] == "softmax"][0]["time"]
    check("a kernel bound by integer multiplies is timed", t.get("ok") is False and "ratio" in t, t)


SOURCE_PAGE = (
    '"Kernel Name","softmax",\n'
    '"Address","Source","Warp Stall Sampling (All Samples)","L1 Wavefronts Shared Excessive",'
    '"L1 Wavefronts Shared","L1 Wavefronts Shared Ideal",\n'
    '"0x7f00","      STS [R36], R3","12","0","131,072","131,072",\n'
    '"0x7f10","      LDS.128 R20, [UR4]","3","0","262,144","262,144",\n'
    '"0x7f20","      FADD R1, R2, R3","40","0","0","0",\n'
    '"Kernel Name","gemm",\n'
    '"Address","Source","L1 Wavefronts Shared","L1 Wavefronts Shared Ideal",\n'
    '"0x7f00","      LDSM.16.M88.4 R16, [R207+UR11]","1,048,576","1,048,576",\n'
    '"0x7f10","      STS [R3], R48","8,192","4,096",\n')


def test_source_page():
    """ncu's source page: per launch, the SASS-level shared-memory
    wavefronts and their ideal summed over the instructions, attached as
    the launch's SASS_WF / SASS_IDEAL (a doubled listing taken once, a
    name mismatch or a count mismatch left alone)."""
    b = V.parse_source_csv("==PROF== x\n" + SOURCE_PAGE)
    check("source: two launches, sums over instructions, thousands separators",
          b == [{"kernel": "softmax", "wavefronts": 393216.0, "ideal": 393216.0},
                {"kernel": "gemm", "wavefronts": 1056768.0, "ideal": 1052672.0}], b)
    check("source: other text gives nothing", V.parse_source_csv("a,b\n1,2\n") == [] and
          V.parse_source_csv(open(os.path.join(DATA, "ncu_raw_sample.csv")).read()) == [])
    prof = [{"kernel": "softmax", "metrics": {}}, {"kernel": "gemm", "metrics": {V.SASS_WF: 1.0}}]
    n = V.attach_source(prof, b)
    check("source: attached to each launch", n == 2 and prof[0]["metrics"][V.SASS_IDEAL] == 393216.0 and
          prof[1]["metrics"][V.SASS_WF] == 1056768.0, prof)
    prof = [{"kernel": "softmax", "metrics": {}}, {"kernel": "gemm", "metrics": {}}]
    check("source: each block twice, taken once", V.attach_source(prof, [b[0], b[0], b[1], b[1]]) == 2 and
          prof[1]["metrics"][V.SASS_IDEAL] == 1052672.0, prof)
    prof = [{"kernel": "softmax", "metrics": {}}, {"kernel": "gemm", "metrics": {}}, {"kernel": "gemm", "metrics": {}}]
    check("source: one block twice (a module of two kernels), two launches of one kernel kept apart",
          V.attach_source(prof, [b[0], b[1], b[1], b[1]]) == 0 and
          V.attach_source(prof, [b[0], b[0], b[1], b[1]]) == 0 and
          V.attach_source(prof, [b[0], b[1], b[1]]) == 3, prof)
    prof = [{"kernel": "softmax", "metrics": {}}, {"kernel": "gemm", "metrics": {}}]
    check("source: one of two blocks doubled", V.attach_source(prof, [b[0], b[1], b[1]]) == 2, prof)
    prof = [{"kernel": "layernorm", "metrics": {}}, {"kernel": "gemm", "metrics": {}}]
    check("source: a kernel name that differs is left alone", V.attach_source(prof, b) == 1 and
          prof[0]["metrics"] == {}, prof)
    check("source: a count mismatch attaches nothing", V.attach_source(prof[:1], b) == 0)
    rows = V.parse_ncu_csv(open(os.path.join(DATA, "ncu_raw_sample.csv")).read())
    with open(os.path.join(DATA, "softmax.report")) as f:
        stext = f.read()
    model = "; bank model, warp 0: st.shared 1 wavefronts (ideal 1), ld.shared 16 (ideal 16)"
    srep = V.parse_report(re.sub(r"(reduce .* via shared memory -> .*)", lambda mm: mm.group(1) + model, stext))
    sm = dict(rows[1]["metrics"])
    for k in (V.SASS_WF, V.SASS_IDEAL):
        sm.pop(k, None)
    sm[V.HW % "ld"], sm[V.HW_WF % "ld"] = 0.05 * sm.get(V.HW_WF % "ld", 1e6), sm.get(V.HW_WF % "ld", 1e6)
    prof = [{"kernel": "softmax", "metrics": sm}]
    V.attach_source(prof, b[:1])
    r = V.bank_result(srep, srep["kernels"]["softmax"], "softmax", prof[0]["metrics"])
    check("source: an l1tex count over 1% with every instruction at its ideal passes on the SASS-level measure",
          r["ok"] and r["source"] == "sass" and r["measured_pct"] == 0.0 and r["l1tex_pct"] > 1.0, r)


FAKE_NCU = r'''#!/usr/bin/env python3
# A stand-in for ncu: --query-metrics lists a few names; a profiling run
# refuses op_ldgsts metrics (as an ncu without them would), else records
# its arguments, writes what the launch driver would (--record) and an
# empty report; --import prints the sample CSV.
import json, os, sys
a = sys.argv[1:]
log = os.environ["FAKE_NCU_LOG"]
with open(log, "a") as f:
    f.write(json.dumps(a) + "\n")
if "--query-metrics" in a:
    print("Device NVIDIA H200 (GH100)")
    for n in ["dram__bytes_read", "gpu__time_duration"] + ["metric%d__x" % i for i in range(60)] + [
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts"]:
        print("%-70s description" % n)
    sys.exit(0)
if "--import" in a:
    print(open(os.environ["FAKE_NCU_CSV"]).read())
    sys.exit(0)
m = a[a.index("--metrics") + 1]
bad = [x for x in m.split(",") if "ldgsts" in x]
if bad:
    print("==ERROR== Failed to find metric %s" % bad[0])
    sys.exit(1)
rec = a[a.index("--record") + 1]
only = a[a.index("--only") + 1].split(",")
kern = {"gemm_portable": "tilec_portable_gemm", "gemm_sm86": "gemm"}
json.dump([{"case": n, "kernel": kern.get(n, n), "reason": ""} for n in only], open(rec, "w"))
open(a[a.index("-o") + 1] + ".ncu-rep", "w").close()
'''


def test_run_ncu():
    """The GPU side's orchestration with a stand-in ncu: one profiling
    process, the optional metrics it lacks left out on the second try, the
    CSV compared, validate.json written, the exit status of the verdicts."""
    d = tempfile.mkdtemp()
    try:
        ncu = os.path.join(d, "ncu")
        with open(ncu, "w") as f:
            f.write(FAKE_NCU)
        os.chmod(ncu, 0o755)
        env = dict(os.environ, FAKE_NCU_LOG=os.path.join(d, "calls"),
                   FAKE_NCU_CSV=os.path.join(DATA, "ncu_raw_sample.csv"))
        r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "validate_report.py"), "--ncu", ncu,
                            "--dir", DATA, "--out", d, "--only", "vector_add,softmax,gemm,gemm_portable,gemm_sm86"],
                           capture_output=True, text=True, env=env)
        calls = [json.loads(x) for x in open(os.path.join(d, "calls"))]
        prof = [c for c in calls if "--metrics" in c]
        check("run: failed tries drop the metric each names, and only it",
              len(prof) == 3 and prof[0][1].count("ldgsts") == 2 and prof[1][1].count("ldgsts") == 1 and
              "ldgsts" not in prof[2][1] and "ldsm" in prof[2][1] and
              "--clock-control" in prof[2] and prof[2][prof[2].index("--clock-control") + 1] == "none",
              [p[1].count("ldgsts") for p in prof])
        check("run: the SourceCounters section asked for", all(
            "--section" in p and p[p.index("--section") + 1] == "SourceCounters" for p in prof), prof[-1])
        k = prof[-1][prof[-1].index("-k") + 1]
        check("run: -k names the cases' kernels only", k == "regex:^(gemm|softmax|tilec_portable_gemm|vector_add)$", k)
        imp = [c for c in calls if "--import" in c]
        check("run: the raw page in base units", imp and imp[0][-5:] == ["--csv", "--page", "raw", "--print-units",
                                                                          "base"], imp)
        check("run: then the source page's SASS view", len(imp) == 2 and imp[1][-5:] == [
            "--csv", "--page", "source", "--print-source", "sass"] and
            os.path.exists(os.path.join(d, "validate_source.csv")), imp)
        check("run: exit 1 (the sample's softmax time fails)", r.returncode == 1, r.stdout[-2000:] + r.stderr)
        out = r.stdout
        check("run: verdict lines", "PASS occupancy identical" in out and "FAIL predicted time within 25%" in out and
              "PASS bank conflicts" in out, out[-1500:])
        v = json.load(open(os.path.join(d, "validate.json")))
        check("run: validate.json", [x["case"] for x in v["results"]] ==
              ["vector_add", "softmax", "gemm", "gemm_portable", "gemm_sm86"] and len(v["verdicts"]) == 3, v.keys())
        check("run: the log says what was left out", "metrics left out" in
              open(os.path.join(d, "validate_ncu.log")).read())
    finally:
        shutil.rmtree(d)


def test_lineinfo_verdicts():
    line, src = LC.marked_line()
    with open(LC.TILE) as f:
        lines = f.read().splitlines()
    check("lineinfo: marked line", "Y[N + block.x] = 1.0" in lines[line - 1] and src == "Y[N + block.x] = 1.0;",
          (line, src))
    out = ("========= COMPUTE-SANITIZER\n"
           "========= Invalid __global__ write of size 4 bytes\n"
           "=========     at oob_store+0x1f0 in /build/tests/gpu/oob_store.tile:%d\n"
           "=========     by thread (0,0,0) in block (3,0,0)\n"
           "=========     Address 0x7f3a0000fa0c is out of bounds\n" % line)
    check("lineinfo: memcheck names the line", LC.memcheck_verdict(out, line)[0])
    check("lineinfo: the wrong line fails", not LC.memcheck_verdict(out.replace(":%d" % line, ":%d" % (line - 1)),
                                                                      line)[0])
    check("lineinfo: no line information fails",
          not LC.memcheck_verdict(out.replace(" in /build/tests/gpu/oob_store.tile:%d" % line, ""), line)[0])
    check("lineinfo: no error reported fails", not LC.memcheck_verdict("========= ERROR SUMMARY: 0 errors\n", line)[0])
    check("lineinfo: ncu source text", LC.ncu_verdict("  12  " + src + "  4  0\n", line, src)[0] and
          not LC.ncu_verdict("no source\n", line, src)[0])


def test_lineinfo_main():
    """lineinfo_check.py's runs with stand-ins for compute-sanitizer and
    ncu on PATH: its exit status follows memcheck's report."""
    d = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(d, "carry", "validate"))
        open(os.path.join(d, "carry", "validate", "oob_store.ptx"), "w").close()
        line, src = LC.marked_line()
        san = os.path.join(d, "compute-sanitizer")
        with open(san, "w") as f:
            f.write("#!/bin/sh\necho '========= Invalid __global__ write of size 4 bytes'\n"
                    "echo \"=========     at oob_store+0x1f0 in /b/tests/gpu/oob_store.tile:${FAKE_LINE}\"\n")
        ncu = os.path.join(d, "ncu")
        with open(ncu, "w") as f:
            f.write("#!/bin/sh\nfor a; do if [ \"$prev\" = -o ]; then : > \"$a.ncu-rep\"; fi; prev=$a; done\n"
                    "case \"$*\" in *--page*) echo '%d   %s   12   0';; esac\n" % (line, src))
        os.chmod(san, 0o755)
        os.chmod(ncu, 0o755)
        env = dict(os.environ, PATH=d + os.pathsep + os.environ["PATH"], TILEC_CARRY=os.path.join(d, "carry"))
        cmd = [sys.executable, os.path.join(ROOT, "bench", "lineinfo_check.py"), "--out", d]
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(env, FAKE_LINE=str(line)))
        check("lineinfo run: memcheck and ncu name the line, exit 0", r.returncode == 0 and
              "PASS compute-sanitizer memcheck" in r.stdout and "PASS ncu source page" in r.stdout,
              r.stdout + r.stderr)
        check("lineinfo run: outputs kept", os.path.exists(os.path.join(d, "lineinfo_memcheck.txt")) and
              src in open(os.path.join(d, "lineinfo_ncu_source.txt")).read())
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(env, FAKE_LINE=str(line + 1)))
        check("lineinfo run: another line, exit 1", r.returncode == 1 and "FAIL compute-sanitizer" in r.stdout,
              r.stdout)
    finally:
        shutil.rmtree(d)


def test_lineinfo_ptx(tilec):
    """The seeded kernel compiles (the compiler cannot prove the scalar
    index in bounds and does not mask it) and its unmasked store carries
    the marked line."""
    d = tempfile.mkdtemp()
    try:
        ptx = os.path.join(d, "oob_store.ptx")
        r = subprocess.run([tilec, LC.TILE, "-arch=sm_90a", "-lineinfo", "-o", ptx], capture_output=True, text=True)
        check("lineinfo: oob_store.tile compiles", r.returncode == 0, r.stderr)
        if r.returncode:
            return
        text = open(ptx).read()
        files = dict(re.findall(r'\.file\s+(\d+)\s+"([^"]+)"', text))
        loc, found = None, None
        for ln in text.splitlines():
            m = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)\s+\d+", ln)
            if m:
                loc = (m.group(1), int(m.group(2)))
            if re.match(r"\s*st\.global\.b32\s+\[%rd\d+\],\s*1065353216;", ln):   # the unpredicated store of 1.0
                found = loc
        line, _ = LC.marked_line()
        check("lineinfo: the stray store's .loc is the marked line",
              found is not None and found[1] == line and files.get(found[0], "").endswith("oob_store.tile"),
              (found, files))
    finally:
        shutil.rmtree(d)


def test_prepare_commands(tilec):
    """The prepare command of a case: its report predicts what the case's
    sizes give."""
    d = tempfile.mkdtemp()
    try:
        case = V.BY_NAME["partial_sum"]
        cmd = V.tilec_command(tilec, case, d)
        check("prepare: command", "--dim" in cmd and "N=268435456" in cmd and "NB=65536" in cmd and
              "-arch=sm_90a" in cmd, cmd)
        r = subprocess.run(cmd, capture_output=True, text=True)
        check("prepare: partial_sum compiles", r.returncode == 0, r.stderr)
        if r.returncode:
            return
        rep = V.parse_report(open(os.path.join(d, "partial_sum.report")).read())
        roof = rep["roofline"]["partial_sum"]
        check("prepare: partial_sum's DRAM bytes are X and P once", roof["dram"] == 4 * (1 << 28) + 4 * (1 << 16),
              roof)
        check("prepare: predicted time is DRAM bytes over 4800 GB/s",
              abs(roof["us"] - roof["dram"] / 4800e9 * 1e6) < 0.05 + 1e-9, roof)
        occ = rep["kernels"]["partial_sum"]["occupancy"]
        warps = (rep["kernels"]["partial_sum"]["threads"] + 31) // 32
        check("prepare: occupancy percent is blocks x warps of 64",
              abs(occ["pct"] - 100.0 * occ["blocks"] * warps / 64) < 0.05, occ)
        check("prepare: the report names the other kernel's missing dims",
              "dims missing" in rep["roofline"]["row_sum"]["note"], rep["roofline"]["row_sum"])
    finally:
        shutil.rmtree(d)


def test_interp_compare():
    import struct
    f = lambda *v: struct.pack("<%df" % len(v), *v)  # noqa: E731
    nan = float("nan")
    check("interp: exact equal", IC.compare_output(f(1, 2, nan), f(1, 2, nan), "f32", True)[0])
    check("interp: exact one ulp off fails", not IC.compare_output(f(1, 2), f(1, 2.0000002), "f32", True)[0])
    check("interp: within f32 tolerance", IC.compare_output(f(1, 2, 3), f(1, 2, 3.00001), "f32", False)[0])
    check("interp: NaN in another place fails", not IC.compare_output(f(1, nan, 3), f(1, 2, 3), "f32", False)[0])
    check("interp: dropped element fails", not IC.compare_output(f(1, 2, 0), f(1, 2, 3), "f32", False)[0])
    check("interp: zero pattern", not IC.compare_output(f(0, 2, 3), f(1e-9, 2, 3), "f32", False, True)[0])
    check("interp: max abs", IC.compare_output(f(1, 2), f(1.0005, 2), "f32", False, False, 1e-3)[0] and
          not IC.compare_output(f(1, 2), f(1.01, 2), "f32", False, False, 1e-3)[0])
    b = IC.bf16_bits([1.0, -2.5, 3.140625])
    check("interp: bf16 bits", list(b) == [0x3F80, 0xC020, 0x4049] and IC.decode(b.tobytes(), "bf16") ==
          [1.0, -2.5, 3.140625], list(b))


def test_interp_prepare():
    d = tempfile.mkdtemp()
    try:
        try:
            IC.prepare(d)
        except Exception as e:  # noqa: BLE001
            check("interp: prepare", False, repr(e))
            return
        man = json.load(open(os.path.join(d, "manifest.json")))
        names = {c["file"] for c in man["cases"]}
        ex = {"examples/" + f for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".tile")}
        check("interp: every example has a case", ex <= names, ex - names)
        check("interp: the other cases are kernels of tests/perf", all(n.startswith("tests/perf/") for n in names - ex),
              names - ex)
        kernels = {(c["file"], c["kernel"]) for c in man["cases"]}
        check("interp: both kernels of the two-kernel examples",
              {("examples/reduction.tile", "row_sum"), ("examples/reduction.tile", "partial_sum"),
               ("examples/gather_rows.tile", "gather_rows"), ("examples/gather_rows.tile", "scatter_rows")} <= kernels)
        problems = IC.dry_run(d)
        check("interp: the interpreter's outputs match plain-Python references", problems == [], problems)
        p = os.path.join(d, "transpose_f32.Y.interp.bin")
        b = bytearray(open(p, "rb").read())
        b[40:44] = bytes(4)
        open(p, "wb").write(b)
        problems = IC.dry_run(d)
        check("interp: a changed element is found", len(problems) == 1 and "transpose_f32" in problems[0], problems)
    finally:
        shutil.rmtree(d)


def test_sanitize_selection(tilec):
    """bench/sanitize.py on a folder like .devcarry: each file's kind from
    its params, a byte-identical copy run once, an arch the GPU cannot run
    left out, the shards a partition of the distinct files."""
    d = tempfile.mkdtemp()
    try:
        for sub in ("gemm", "attn", "tune/gemm"):
            os.makedirs(os.path.join(d, sub))
        ex = os.path.join(ROOT, "examples")
        for out, src, arch in (("gemm/g90.ptx", "gemm", "sm_90a"), ("gemm/g86.ptx", "gemm", "sm_86"),
                               ("gemm/g100.ptx", "gemm", "sm_100a"), ("attn/a86_c.ptx", "attention", "sm_86")):
            subprocess.run([tilec, os.path.join(ex, src + ".tile"), "-arch=" + arch, "--no-ptxas",
                            "-o", os.path.join(d, out)], check=True)
        for e in (".ptx", ".meta"):
            shutil.copy(os.path.join(d, "gemm", "g90" + e), os.path.join(d, "tune", "gemm", "c" + e))
        env = dict(os.environ, TILEC_CARRY=d, PYTHONPATH=os.path.join(ROOT, "python"))
        if "TILEC_LIB_DIR" not in env:
            env["TILEC_LIB_DIR"] = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(tilec))), "lib")

        def listing(*args):
            r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "sanitize.py"), "--list"] + list(args),
                               capture_output=True, text=True, env=env)
            return r.returncode, r.stdout

        rc, out = listing()
        rows = {ln.split()[0]: ln.split()[1:] for ln in out.splitlines() if not ln.startswith("sanitize.py")}
        check("sanitize: kinds from the params", rows.get("gemm/g90.ptx") == ["sm_90a", "gemm", "+", "fallback"] and
              rows.get("gemm/g86.ptx") == ["sm_86", "gemm"] and rows.get("attn/a86_c.ptx") == ["sm_86", "attn4"],
              out)
        check("sanitize: the copy counted once, sm_100a left out", rc == 0 and "tune/gemm/c.ptx" not in rows and
              "gemm/g100.ptx" not in rows and "1 byte-identical" in out and "1 of another arch" in out, out)
        shards = [set(ln.split()[0] for ln in listing("--shard", "%d/2" % i)[1].splitlines()
                      if not ln.startswith("sanitize.py")) for i in (0, 1)]
        check("sanitize: two shards partition the files", shards[0] | shards[1] == set(rows) and
              not shards[0] & shards[1] and all(shards), shards)
    finally:
        shutil.rmtree(d)


def ptxas_path():
    for p in (os.environ.get("PTXAS"), shutil.which("ptxas"), "/usr/local/cuda/bin/ptxas"):
        if p and os.access(p, os.X_OK):
            return p
    return None


def test_sass_pc_log():
    log = ["=========     Error: Race reported between Read access at attention+0xd440",
           "=========         and Write access at attention+0xcee0 [96 hazards]",
           "=========         and Write access at attention+0xcee0 [96 hazards]",
           "attn/a.ptx    attn4   N=130 H/HK=2 2.3e-03  ok  (1.7 s)",
           "attn/b.ptx    attn4   N=130 H/HK=2 2.3e-03  ok  (1.7 s)",
           "========= Barrier error detected. Divergent thread(s) in block",
           "=========     at tilec_portable_gemm+0x7770",
           "=========     Host Frame: cuLaunchKernel in libcuda.so.1+0x2d5f0",
           "gemm/c.ptx    gemm   ok"]
    got = SP.findings(log)
    check("sass_pc: each finding goes to the file line after it, each PC once",
          got == [("attn/a.ptx", [("attention", 0xd440), ("attention", 0xcee0)]),
                  ("gemm/c.ptx", [("tilec_portable_gemm", 0x7770), ("libcuda.so.1", 0x2d5f0)])], got)


def test_sass_pc(tilec):
    """bench/sass_pc.py on a module of two kernels (the sm_90a GEMM and its
    portable fallback) compiled with -lineinfo: every SASS row of each
    kernel lands on a PTX statement inside that kernel's body, and the
    .tile line the cubin gives for an offset is the line of the last `.loc`
    before the PTX line it gives (two tables ptxas writes apart)."""
    ptxas = ptxas_path()
    if not ptxas:
        print("skip: no ptxas (the SASS offset checks)")
        return
    d = tempfile.mkdtemp()
    old = os.environ.get("PTXAS")
    try:
        ptx = os.path.join(d, "g.ptx")
        subprocess.run([tilec, os.path.join(ROOT, "examples", "gemm.tile"), "-arch=sm_90a", "-lineinfo",
                        "--no-ptxas", "-o", ptx], check=True)
        os.environ["PTXAS"] = ptxas
        loc = SP.Locator(ptx, "sm_90")
        text = loc.text
        entries = [i + 1 for i, ln in enumerate(text) if ".entry " in ln]
        body = {}
        for k, start in enumerate(entries):
            name = re.search(r"\.entry\s+(\w+)", text[start - 1]).group(1)
            body[name] = (start, entries[k + 1] if k + 1 < len(entries) else len(text) + 1)
        check("sass_pc: both kernels have SASS rows", sorted(loc.ptx_rows) == sorted(body) == sorted(loc.kernels),
              (sorted(loc.ptx_rows), sorted(body)))
        stray, agree, disagree = [], 0, []
        for k, rows in loc.ptx_rows.items():
            lo, hi = body.get(k, (0, 0))
            for addr, line in rows:
                t = text[line - 1].strip()
                if not lo < line < hi or not t or t.startswith(("//", ".loc", ".file", "$L")):
                    stray.append((k, hex(addr), line, t))
                src = SP.lookup(loc.src_rows.get(k, []), addr)
                locs = [int(m.group(1)) for m in (re.match(r"\s*\.loc\s+\d+\s+(\d+)", x) for x in text[lo:line])
                        if m]
                if src is not None and locs:
                    if locs[-1] == src:
                        agree += 1
                    else:
                        disagree.append((k, hex(addr), line, src, locs[-1]))
        check("sass_pc: every row on a statement of its own kernel", not stray and sum(map(len, loc.ptx_rows.values()))
              > 100, stray[:5])
        check("sass_pc: the .tile line of an offset is the .loc before its PTX line",
              agree > 100 and len(disagree) <= agree // 50, (agree, disagree[:5]))
        k, (addr, line) = "gemm", loc.ptx_rows["gemm"][len(loc.ptx_rows["gemm"]) // 2]
        w = loc.where(k, addr)
        check("sass_pc: where() names the PTX line", w and w.startswith("PTX line %d: " % line), w)
        out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "sass_pc.py"), ptx, "sm_90",
                              "gemm+0x%x" % addr, "nokernel+0x10"], capture_output=True, text=True)
        check("sass_pc: the command prints each PC, exit 1 for a PC without a line",
              out.returncode == 1 and "PTX line %d:" % line in out.stdout and "nokernel+0x10: no line" in out.stdout,
              out.stdout + out.stderr)
        with open(os.path.join(d, "san.txt"), "w") as f:
            f.write("========= Error: Race reported between Read access at gemm+0x%x\n"
                    "=========     Host Frame: cuLaunchKernel in libcuda.so.1+0x2d5f0\n"
                    "g.ptx    gemm   ok\n" % addr)
        out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "sass_pc.py"), "--log",
                              os.path.join(d, "san.txt"), "--carry", d], capture_output=True, text=True)
        check("sass_pc: --log locates the kernel's PCs of each file, host frames left out",
              out.returncode == 0 and out.stdout.count("\n") == 1 and "gemm+0x%x: PTX line %d:" % (addr, line)
              in out.stdout, out.stdout + out.stderr)
    finally:
        if old is None:
            os.environ.pop("PTXAS", None)
        else:
            os.environ["PTXAS"] = old
        shutil.rmtree(d)


def test_charts_parsers():
    rows = charts.parse_attn(open(os.path.join(ROOT, "bench", "attn_results_h200.txt")).read())
    ks = {r["kernel"] for r in rows}
    check("charts: attention table", {"flash", "cuDNN", "128x128", "128x64_sm86"} <= ks and
          {r["D"] for r in rows} == {64, 128} and {r["causal"] for r in rows} == {"no", "yes"}, ks)
    first = [r for r in rows if r["D"] == 64 and r["N"] == 1024 and r["causal"] == "no"]
    check("charts: attention row values", {r["kernel"]: r["TFLOP/s"] for r in first}.get("flash") == 287.5 and
          {r["kernel"]: r["TFLOP/s"] for r in first}.get("128x128") == 312.6, first[:3])
    rows, ceil = charts.parse_gemm(open(os.path.join(ROOT, "bench", "gemm_results_h200.txt")).read())
    cub = [r for r in rows if r["kernel"] == "torch.matmul (cuBLAS) bf16" and r["x"] == 4096]
    check("charts: gemm table", cub and cub[0]["TFLOP/s"] == 730.6 and "mma.sync m16n8k16 bf16 ceiling" in ceil, cub)
    text = ("%-36s %6s %10s %8s  %s\n" % ("kernel", "size", "TFLOP/s", "of peak", "regs/spill") +
            "%-36s %6d %10.1f %7.0f%%  %s\n" % ("default_sm90a_bf16", 4096, 737.8, 115, "168/0") +
            "%-36s %6s %10.1f\n" % ("mma.sync m16n8k16 bf16 ceiling", "-", 640.3) +
            "\n%-36s %18s %10s %10s\n" % ("LLM projection shapes (bf16)", "M x N x K", "TFLOP/s", "x cuBLAS") +
            "%-36s %18s %10.1f %10.3f\n" % ("default_sm90a_bf16", "4096x14336x4096", 644.0, 0.972) +
            "%-36s %6d  %.3f x cuBLAS bf16\n" % ("default_sm90a_bf16", 4096, 0.966))
    rows, ceil = charts.parse_gemm(text)
    check("charts: gemm_bench.py's current tables", [(r["table"][:3], r["x"], r["TFLOP/s"]) for r in rows] ==
          [("squ", 4096, 737.8), ("LLM", "4096x14336x4096", 644.0)] and ceil == {"mma.sync m16n8k16 bf16 ceiling": 640.3},
          rows)
    val = {"arch": "sm_90a", "results": [
        {"case": "softmax", "arch": "sm_90a", "time": {"predicted_us": 111.8, "measured_us": 130.0, "flops": 6.7e8,
                                                        "predicted_dram": 536870912, "measured_dram": 5.37e8,
                                                        "peaks": {"gbs": 4800}}},
        {"case": "gemm_sm86", "arch": "sm_86", "time": {"predicted_us": 1931.0}},
        {"case": "gemm_portable", "arch": "sm_90a", "time": {"predicted_us": None}}]}
    pts, peaks = charts.roofline_points(val)
    check("charts: roofline points are the sm_90a predictions", [p["name"] for p in pts] == ["softmax"] and
          peaks == {"gbs": 4800}, pts)


class FakeTorch:
    """Enough of torch for make_args on the build machine: shapes only."""
    bfloat16, float32, int32 = "bf16", "f32", "i32"

    class T:
        def __init__(self, *shape):
            self.shape = shape

        def to(self, *a, **k):
            return self

    @staticmethod
    def randn(*shape, **k):
        return FakeTorch.T(*shape)

    empty = randn

    @staticmethod
    def empty_like(t, **k):
        return FakeTorch.T(*t.shape)

    @staticmethod
    def randperm(n, **k):
        return FakeTorch.T(n)

    @staticmethod
    def full(shape, *a, **k):
        return FakeTorch.T(*shape)


def test_make_args():
    # every case gets its launch's arguments, the sm_86 twins their own
    # case's (a KeyError there left both out of a run: 2026-12-03 19:30)
    bad = []
    for c in V.CASES:
        try:
            V.make_args(c, FakeTorch)
        except Exception as e:  # noqa: BLE001 - collected
            bad.append("%s: %r" % (c["name"], e))
    check("validate: arguments for every case", not bad, bad)
    g = V.make_args(V.BY_NAME["gemm_sm86"], FakeTorch)
    check("validate: gemm_sm86 takes gemm's arguments", [t.shape for t in g] == [(4096, 4096)] * 3,
          [getattr(t, "shape", t) for t in g])


def test_sass_ops():
    """Words of the D = 128 sm_90a attention's cubin (ptxas 13.0) beside what
    the device's Nsight Compute listing printed for them."""
    table = SO.load_table()
    cases = [  # offset, lo, hi, expected name, predicate, fields
        (0x0, 0x00000018000d7308, 0x000fe20000000800, "MUFU.EX2", "", "R13, R24"),
        (0x0, 0x0000000000007308, 0x004e260000001000, "MUFU.RCP", "", "R0, R0"),
        (0x0, 0x00000004000b0308, 0x005e220000000c00, "MUFU.LG2", "@P0", "R11, R4"),
        (0x0, 0x00000000000079c5, 0x000fe20000000000, "WARPGROUP.ARRIVE", "", ""),
        (0x0, 0x00008000000079c5, 0x000fe40000010100, "WARPGROUP.DEPBAR", "", "gsb0, 1"),
        (0x0, 0x00008000000079c5, 0x000fe40000010000, "WARPGROUP.DEPBAR", "", "gsb0, 0"),
        (0x0, 0x0000000f189a723e, 0x001fe400000010ff, "F2FP", "", "R154, R24, R15"),
        (0x0, 0x41e0001098587df0, 0x000fe20008701858, "HGMMA", "", "R88, R152, R16"),
        (0x0, 0x000000ffffff89a7, 0x000fe2000810001e, "SYNCS", "@!P0", "RZ, RZ, RZ"),
        (0x70, 0x0000000000681947, 0x000fea0003800000, "BRA", "@P1", "0x220"),
        (0x530, 0x0000005800b88947, 0x000ff60003800000, "BRA", "@!P0", "0x6020"),
        (0x590, 0xfffffffc00f08947, 0x000fea000383ffff, "BRA", "@!P0", "0x560"),
    ]
    for at, lo, hi, name, pred, fields in cases:
        got = SO.decode(table, at, lo, hi)[:3]
        check("sass_ops decodes %s at 0x%x" % (name, at), got == (name, pred, fields), got)
    check("sass_ops: an opcode not in the table is named by its code",
          SO.decode({}, 0, 0x7308, 0)[0] == "?0x308")
    ins = [(0x10, "HGMMA", "", "", None), (0x20, "MUFU.EX2", "", "", None), (0x30, "BRA", "@P0", "0x10", 0x10),
           (0x40, "BRA", "@P1", "0x00", 0x0), (0x50, "EXIT", "", "", None)]
    check("sass_ops: the innermost loop of two nested ones", SO.innermost_loops(ins) == [(0x10, 0x30)],
          SO.innermost_loops(ins))
    key = SO.key_view(ins, 0x10, 0x30)
    check("sass_ops: key view of the loop", [k.split()[1] for k in key] == ["HGMMA", "MUFU.EX2", "@P0"], key)
    tmp = tempfile.mkdtemp()
    try:
        listing = os.path.join(tmp, "k.sass")
        with open(listing, "w") as f:
            f.write("        /*0000*/                   MUFU.EX2 R13, R24 ;   /* 0x00000018000d7308 */\n"
                    "                                                         /* 0x000fe20000000800 */\n"
                    "        /*0010*/                   FMUL R1, R2, R3 ;     /* 0x0000000302017308 */\n"
                    "                                                         /* 0x000fe20000000000 */\n")
        saved = SO.TABLE
        SO.TABLE = os.path.join(tmp, "t.ops")
        try:
            with open(SO.TABLE, "w") as f:
                f.write("0x308 MUFU\n")
            rc = SO.learn("-", "-", listing)
            check("sass_ops learn: a listing naming a known opcode otherwise is a clash", rc == 1, rc)
            check("sass_ops learn: the table keeps its entry", SO.load_table() == {0x308: "MUFU"}, SO.load_table())
        finally:
            SO.TABLE = saved
    finally:
        shutil.rmtree(tmp)


def main():
    tilec = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "bin", "tilec")
    test_parse_report()
    test_parse_csv()
    test_compare()
    test_conversions_problems_imul()
    test_source_page()
    test_run_ncu()
    test_lineinfo_verdicts()
    test_lineinfo_main()
    test_interp_compare()
    test_charts_parsers()
    test_make_args()
    test_sass_pc_log()
    test_sass_ops()
    if os.access(tilec, os.X_OK):
        test_sass_pc(tilec)
        test_lineinfo_ptx(tilec)
        test_prepare_commands(tilec)
    else:
        print("skip: no tilec command at %s (the .loc and prepare checks)" % tilec)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    try:
        from tilec import _lib
        _lib.tilec()
        _lib.tilert()
        have_lib = True
    except Exception as e:  # noqa: BLE001
        print("skip: libtilec / libtilert not loadable (%s): the interpreter prepare check" % e)
        have_lib = False
    if have_lib:
        test_interp_prepare()
        if os.access(tilec, os.X_OK):
            test_sanitize_selection(tilec)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
