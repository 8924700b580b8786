#!/usr/bin/env python3
"""gemm_power.py - SM clock, power and speed of the warp-MMA GEMMs and of
the probes below them, each run back to back for a while (nvidia-smi
sampling every 100 ms), two rounds:
  - bare mma.sync (bench/mma_probe.py: 8 accumulators per warp, operands
    in registers, no memory traffic), 8 warps per SM;
  - the GEMM mainloop without synchronisation (fed_kernel: a 64x64 warp
    tile, every fragment reloaded with ldmatrix per k16 step from shared
    memory holding random data, no barrier), 8 warps per SM, alone and with
    the L2 -> shared cp.async traffic of a 256x128x64 / 128x128x64 block
    tile streamed beside it: what any mma.sync GEMM with this warp tile
    executes per product, less its barriers and epilogue;
  - tilec's GEMM (the default variant's sm_86 PTX from .devcarry/gemm),
    Triton's GEMM held to mma.sync (bench/triton_mma.py), cuBLAS
    (torch.matmul, wgmma), at 8192^3 bf16.
At the GPU's power limit a kernel's speed is its power over the energy it
spends per FLOP: the table gives TFLOP/s, the median SM clock and power
while it ran, and joules per PFLOP.

    TILEC_LIB_DIR=... PYTHONPATH=python python3 bench/gemm_power.py [SECONDS]
"""
import ctypes
import glob
import os
import subprocess
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tilec  # noqa: E402
import clocks  # noqa: E402 (bench/clocks.py)
import mma_probe  # noqa: E402
from power_probe import window, samples  # noqa: E402
import power_probe  # noqa: E402


MMA = mma_probe.MMA


def fed_kernel(copies):
    """PTX of a GEMM mainloop without synchronisation: per iteration one k16
    step of a 64x64 warp tile (4 A and 4 B ldmatrix.x4 from shared memory
    filled with random data at the start, 32 mma.sync), then `copies`
    16-byte cp.async per thread streamed from an L2-resident buffer into a
    per-warp shared ring (commit, wait until at most 4 groups are pending).
    copies=3 moves 1.5 KB per warp per 131072 FLOP (11.7 B per kFLOP), the
    L2 -> shared traffic of a 256x128 block tile ((256 + 128) x 2 bytes per
    2 x 256 x 128 FLOP per k); copies=4 (15.6 B/kFLOP) that of 128x128;
    copies=2 (7.8) that of 256x256, whose accumulators alone would fill the
    register file; copies=0 is the mainloop alone."""
    nm, nn = 4, 8
    body = ["  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {a%d,a%d,a%d,a%d}, [sp+%d];"
            % (4 * m, 4 * m + 1, 4 * m + 2, 4 * m + 3, 512 * m) for m in range(nm)]
    body += ["  ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {b%d,b%d,b%d,b%d}, [sp+%d];"
             % (4 * q, 4 * q + 1, 4 * q + 2, 4 * q + 3, 4096 + 512 * q) for q in range(nn // 2)]
    for m in range(nm):
        for n in range(nn):
            j = 4 * (m * nn + n)
            body.append(MMA.format(j, j + 1, j + 2, j + 3, 4 * m, 4 * m + 1, 4 * m + 2, 4 * m + 3, 2 * n, 2 * n + 1))
    for k in range(copies):
        body += ["  and.b64 g, goff, gmask;", "  add.u64 g, g, src;",
                 "  cp.async.cg.shared.global [rb+%d], [g], 16;" % (512 * (k % 8)),
                 "  add.u64 goff, goff, gstep;"]
    if copies:
        body += ["  cp.async.commit_group;", "  cp.async.wait_group 4;"]
    nc = 4 * nm * nn
    lines = [".version 8.0", ".target sm_80", ".address_size 64",
             ".visible .entry probe(.param .u64 out, .param .u32 iters, .param .u64 srcp, .param .u64 maskp)", "{",
             "  .reg .b32 a<16>, b<16>, x<4>;", "  .reg .f32 c<%d>, s;" % nc,
             "  .reg .u32 i, n, tid, sp, rb, w;", "  .reg .u64 p, o, src, g, goff, gstep, gmask, t;", "  .reg .pred q;",
             "  .shared .align 128 .b8 sm[24576];",
             "  mov.u32 tid, %tid.x;", "  ld.param.u64 src, [srcp];", "  ld.param.u64 gmask, [maskp];",
             # random fragments: each of the 128 threads copies 64 bytes of the buffer's start
             "  mul.wide.u32 t, tid, 64;", "  add.u64 g, src, t;", "  mov.u32 n, sm;", "  shl.b32 w, tid, 6;",
             "  add.u32 w, w, n;"]
    for k in range(4):
        lines += ["  ld.global.v4.u32 {x0,x1,x2,x3}, [g+%d];" % (16 * k),
                  "  st.shared.v4.u32 [w+%d], {x0,x1,x2,x3};" % (16 * k)]
    lines += ["  bar.sync 0;",
              "  and.b32 sp, tid, 31;", "  shl.b32 sp, sp, 4;", "  add.u32 sp, sp, n;",
              # ring: 4 KB per warp after the 8 KB of fragments, 16 bytes per lane
              "  shr.u32 w, tid, 5;", "  shl.b32 w, w, 12;", "  add.u32 rb, n, 8192;", "  add.u32 rb, rb, w;",
              "  and.b32 w, tid, 31;", "  shl.b32 w, w, 4;", "  add.u32 rb, rb, w;",
              # stream offset: (block * 128 + tid) * 16, step grid * 128 * 16
              "  mov.u32 i, %ctaid.x;", "  mov.u32 w, %ntid.x;", "  mad.lo.u32 i, i, w, tid;",
              "  mul.wide.u32 goff, i, 16;", "  mov.u32 i, %nctaid.x;", "  mul.lo.u32 i, i, w;",
              "  mul.wide.u32 gstep, i, 16;"]
    lines += ["  mov.f32 c%d, 0f00000000;" % i for i in range(nc)]
    lines += ["  ld.param.u32 n, [iters];", "  mov.u32 i, 0;", "L:"] + body
    lines += ["  add.u32 i, i, 1;", "  setp.lt.u32 q, i, n;", "  @q bra L;", "  cp.async.wait_all;",
              "  mov.f32 s, 0f00000000;"]
    lines += ["  add.f32 s, s, c%d;" % i for i in range(nc)]
    lines += ["  ld.param.u64 p, [out];", "  mov.u32 i, %ctaid.x;", "  mov.u32 n, %ntid.x;",
              "  mad.lo.u32 i, i, n, tid;", "  mul.wide.u32 o, i, 4;", "  add.u64 p, p, o;",
              "  st.global.f32 [p], s;", "  ret;", "}"]
    return ("\n".join(lines) + "\n").encode() + b"\0"


def fed_probe(copies, src_buf, warps_per_sm=8, iters=8192):
    """(fn, flop) of one launch of fed_kernel(copies) over src_buf (a CUDA
    tensor whose byte size is a power of two)."""
    cuda = ctypes.CDLL("libcuda.so.1")
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    r = cuda.cuModuleLoadData(ctypes.byref(mod), fed_kernel(copies))
    if r != 0:
        raise RuntimeError("cuModuleLoadData: %d" % r)
    if cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"probe") != 0:
        raise RuntimeError("cuModuleGetFunction failed")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    threads = 128
    blocks = sms * warps_per_sm // 4
    nbytes = src_buf.numel() * src_buf.element_size()
    assert nbytes & (nbytes - 1) == 0
    out = torch.empty(blocks * threads, device="cuda")
    p_out, p_it = ctypes.c_uint64(out.data_ptr()), ctypes.c_uint32(iters)
    p_src, p_mask = ctypes.c_uint64(src_buf.data_ptr()), ctypes.c_uint64((nbytes - 1) & ~15)
    args = (ctypes.c_void_p * 4)(*(ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in (p_out, p_it, p_src, p_mask)))
    stream = torch.cuda.current_stream().cuda_stream
    keep = (mod, out, p_out, p_it, p_src, p_mask, args, src_buf)

    def launch():
        keep  # noqa: B018 (the arguments live as long as the closure)
        r = cuda.cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, ctypes.c_void_p(stream), args, None)
        if r != 0:
            raise RuntimeError("cuLaunchKernel: %d" % r)
    flop = blocks * (threads // 32) * iters * 32 * 4096.0
    return launch, flop, blocks * threads * iters * copies * 16.0


def probe(nm, nn, ldsm, warps_per_sm=8, iters=8192):
    """(fn, flop) of one launch of mma_probe's kernel(nm, nn, ldsm)."""
    cuda = ctypes.CDLL("libcuda.so.1")
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    r = cuda.cuModuleLoadData(ctypes.byref(mod), mma_probe.kernel(nm, nn, ldsm))
    if r != 0:
        raise RuntimeError("cuModuleLoadData: %d" % r)
    if cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"probe") != 0:
        raise RuntimeError("cuModuleGetFunction failed")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    threads = 128
    blocks = sms * warps_per_sm // 4
    out = torch.empty(blocks * threads, device="cuda")
    p_out, p_it = ctypes.c_uint64(out.data_ptr()), ctypes.c_uint32(iters)
    args = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(p_out), ctypes.c_void_p),
                                 ctypes.cast(ctypes.byref(p_it), ctypes.c_void_p))
    stream = torch.cuda.current_stream().cuda_stream
    keep = (mod, out, p_out, p_it, args)

    def launch():
        keep  # noqa: B018 (the arguments live as long as the closure)
        r = cuda.cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, ctypes.c_void_p(stream), args, None)
        if r != 0:
            raise RuntimeError("cuLaunchKernel: %d" % r)
    return launch, blocks * (threads // 32) * iters * nm * nn * 4096.0


COPY_BYTES = {}


def main():
    if len(sys.argv) > 1:
        power_probe.SECONDS = float(sys.argv[1])
    torch.zeros(1, device="cuda")
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    flop = 2.0 * n ** 3
    src = torch.randn(8 << 20, device="cuda", dtype=torch.bfloat16)     # 16 MB: stays in L2
    kern = [("mma.sync bare, 8 acc/warp", *probe(1, 8, False))]
    for copies in (0, 2, 3, 4):
        fn, fl, nb = fed_probe(copies, src)
        kern.append(("mainloop + %d cp.async (%.1f B/kFLOP)" % (copies, 1e3 * nb / fl), fn, fl))
        COPY_BYTES[kern[-1][0]] = nb / fl
    paths = sorted(glob.glob(os.path.join(ROOT, ".devcarry", "gemm", "default_*.ptx")))
    if paths:
        mod = tilec.load_files(paths[0])
        mod(a, b, c)
        ref = a.float() @ b.float()
        err = ((c.float() - ref).norm() / ref.norm()).item()
        if not err <= 1e-2:
            raise SystemExit("tilec gemm wrong at 8192^3: rel err %.2e" % err)
        kern.append(("tilec " + os.path.basename(paths[0])[:-4], lambda: mod(a, b, c), flop))
        del ref
    else:
        print("no .devcarry/gemm/default_*.ptx (run bench/prepare.sh): tilec's GEMM not run")
    try:
        import triton_mma
        cfg = triton_mma.PEER
        triton_mma.run(cfg, a, b, c)
        kern.append(("triton %dx%dx%d w%d s%d mma.sync" % cfg, lambda: triton_mma.run(cfg, a, b, c), flop))
    except Exception as e:  # noqa: BLE001 - the peer is optional
        print("no Triton peer: %s" % str(e).splitlines()[0])
    kern.append(("cuBLAS (torch.matmul)", lambda: torch.matmul(a, b, out=c), flop))

    log = tempfile.mktemp(suffix=".csv")
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=" + clocks.QUERY, "--format=csv,noheader,nounits",
                            "-lms", "100", "-f", log])
    done = []
    try:
        time.sleep(1.0)
        for rnd in range(2):
            for label, fn, fl in kern:
                time.sleep(0.5)
                t0, t1, tf = window(fn, fl)
                done.append((label, rnd, t0, t1, tf))
    finally:
        smi.terminate()
        smi.wait()
    print("%-38s %s %8s %8s %8s %9s %7s %8s" % ("kernel", "r", "TFLOP/s", "MHz", "W", "J/PFLOP", "samples",
                                             "L2 TB/s"))
    for label, rnd, t0, t1, tf in done:
        s = samples(log, t0, t1)
        clk = sorted(x[0] for x in s) or [float("nan")]
        pw = sorted(x[1] for x in s) or [float("nan")]
        w = pw[len(pw) // 2]
        bpf = COPY_BYTES.get(label, 0.0)
        print("%-38s %d %8.1f %8.0f %8.0f %9.0f %7d %8s" % (label, rnd, tf, clk[len(clk) // 2], w, 1000.0 * w / tf,
              len(s), "%.2f" % (tf * bpf) if bpf else "-"), flush=True)


if __name__ == "__main__":
    main()
