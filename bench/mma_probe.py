"""Probes of the warp-MMA issue rate on the GPU (no memory traffic): the
bare mma.sync loop of bench/mma_peak.ptx at 4..16 warps per SM, and a loop
shaped like gemm's mainloop for one 64x64 warp tile (4 A x 8 B fragments,
32 accumulators, optionally every fragment reloaded with ldmatrix per k16
step). Prints TFLOP/s per configuration; docs/codegen.md quotes a run.

    python3 bench/mma_probe.py
"""
import ctypes

import torch

from mma_ptx import kernel  # noqa: E402 (the probes' PTX: bench/mma_ptx.py)


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
