"""Probes of the warp-MMA issue rate on the GPU (no memory traffic): the
bare mma.sync loop of bench/mma_peak.ptx at 4..16 warps per SM, and a loop
shaped like gemm's mainloop for one 64x64 warp tile (4 A x 8 B fragments,
32 accumulators, optionally every fragment reloaded with ldmatrix per k16
step). Prints TFLOP/s per configuration; docs/codegen.md quotes a run.

    python3 bench/mma_probe.py
"""
import ctypes

import torch

MMA = ("  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{c{0},c{1},c{2},c{3}}}, "
       "{{a{4},a{5},a{6},a{7}}}, {{b{8},b{9}}}, {{c{0},c{1},c{2},c{3}}};")


def kernel(nm, nn, ldsm):
    """PTX: nm x nn accumulators per warp; A fragment m, B fragment n."""
    body = []
    if ldsm:
        body += ["  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {a%d,a%d,a%d,a%d}, [sp+%d];"
                 % (4 * m, 4 * m + 1, 4 * m + 2, 4 * m + 3, 512 * m) for m in range(nm)]
        body += ["  ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {b%d,b%d,b%d,b%d}, [sp+%d];"
                 % (4 * q, 4 * q + 1, 4 * q + 2, 4 * q + 3, 4096 + 512 * q) for q in range((nn + 1) // 2)]
    for m in range(nm):
        for n in range(nn):
            j = 4 * (m * nn + n)
            body.append(MMA.format(j, j + 1, j + 2, j + 3, 4 * m, 4 * m + 1, 4 * m + 2, 4 * m + 3, 2 * n, 2 * n + 1))
    nc, na, nb = 4 * nm * nn, 4 * nm, 2 * nn + 2
    lines = [".version 8.0", ".target sm_80", ".address_size 64",
             ".visible .entry probe(.param .u64 out, .param .u32 iters)", "{",
             "  .reg .b32 a<%d>, b<%d>;" % (na, nb), "  .reg .f32 c<%d>, s;" % nc,
             "  .reg .u32 i, n, tid, sp;", "  .reg .u64 p, o;", "  .reg .pred q;",
             "  .shared .align 16 .b8 sm[8192];",
             "  mov.u32 tid, %tid.x;", "  and.b32 sp, tid, 31;", "  shl.b32 sp, sp, 4;",
             "  mov.u32 n, sm;", "  add.u32 sp, sp, n;"]
    lines += ["  add.u32 a%d, tid, %d;" % (i, i) for i in range(na)]
    lines += ["  add.u32 b%d, tid, %d;" % (i, i + na) for i in range(nb)]
    lines += ["  mov.f32 c%d, 0f00000000;" % i for i in range(nc)]
    lines += ["  ld.param.u32 n, [iters];", "  mov.u32 i, 0;", "L:"] + body
    lines += ["  add.u32 i, i, 1;", "  setp.lt.u32 q, i, n;", "  @q bra L;", "  mov.f32 s, 0f00000000;"]
    lines += ["  add.f32 s, s, c%d;" % i for i in range(nc)]
    lines += ["  ld.param.u64 p, [out];", "  mov.u32 i, %ctaid.x;", "  mov.u32 n, %ntid.x;",
              "  mad.lo.u32 i, i, n, tid;", "  mul.wide.u32 o, i, 4;", "  add.u64 p, p, o;",
              "  st.global.f32 [p], s;", "  ret;", "}"]
    return ("\n".join(lines) + "\n").encode() + b"\0"


def main():
    cuda = ctypes.CDLL("libcuda.so.1")
    torch.zeros(1, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    stream = torch.cuda.current_stream().cuda_stream
    print("%-34s %9s %9s" % ("probe", "warps/SM", "TFLOP/s"))
    for label, nm, nn, ldsm in (("mma.sync only, 8 accumulators", 1, 8, False),
                                ("64x64 warp tile, registers", 4, 8, False),
                                ("64x64 warp tile, ldmatrix per k16", 4, 8, True)):
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        r = cuda.cuModuleLoadData(ctypes.byref(mod), kernel(nm, nn, ldsm))
        assert r == 0, "cuModuleLoadData: %d" % r
        assert cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"probe") == 0
        for wps in (4, 8, 12, 16):
            threads, iters = 128, 1024
            blocks = sms * wps // 4
            out = torch.empty(blocks * threads, device="cuda")
            p_out, p_it = ctypes.c_uint64(out.data_ptr()), ctypes.c_uint32(iters)
            args = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(p_out), ctypes.c_void_p),
                                         ctypes.cast(ctypes.byref(p_it), ctypes.c_void_p))

            def launch():
                r = cuda.cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, ctypes.c_void_p(stream), args, None)
                assert r == 0, "cuLaunchKernel: %d" % r
            for _ in range(3):
                launch()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(10):
                launch()
            e1.record()
            torch.cuda.synchronize()
            ms = e0.elapsed_time(e1) / 10
            flops = blocks * (threads // 32) * iters * nm * nn * 4096
            print("%-34s %9d %9.1f" % (label, wps, flops / ms / 1e9), flush=True)


if __name__ == "__main__":
    main()
