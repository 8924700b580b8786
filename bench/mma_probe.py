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


def launcher(ptx, blocks, threads, params, keep=(), entry=b"probe"):
    """A function that launches kernel `entry` of ptx (NUL-terminated bytes)
    on torch's current stream with params (ctypes values); it keeps them and
    `keep` (the tensors they point into) alive. Raises RuntimeError on a
    driver error."""
    cuda = ctypes.CDLL("libcuda.so.1")
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    r = cuda.cuModuleLoadData(ctypes.byref(mod), ptx)
    if r != 0:
        raise RuntimeError("cuModuleLoadData: %d" % r)
    if cuda.cuModuleGetFunction(ctypes.byref(fn), mod, entry) != 0:
        raise RuntimeError("cuModuleGetFunction %s failed" % entry.decode())
    args = (ctypes.c_void_p * len(params))(*(ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in params))
    stream = torch.cuda.current_stream().cuda_stream
    keep = (mod, params, args, keep)

    def launch():
        keep  # noqa: B018 (the module and arguments live as long as the closure)
        r = cuda.cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, ctypes.c_void_p(stream), args, None)
        if r != 0:
            raise RuntimeError("cuLaunchKernel: %d" % r)
    return launch


def main():
    torch.zeros(1, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print("%-34s %9s %9s" % ("probe", "warps/SM", "TFLOP/s"))
    for label, nm, nn, ldsm in (("mma.sync only, 8 accumulators", 1, 8, False),
                                ("64x64 warp tile, registers", 4, 8, False),
                                ("64x64 warp tile, ldmatrix per k16", 4, 8, True)):
        ptx = kernel(nm, nn, ldsm)
        for wps in (4, 8, 12, 16):
            threads, iters = 128, 1024
            blocks = sms * wps // 4
            out = torch.empty(blocks * threads, device="cuda")
            launch = launcher(ptx, blocks, threads, [ctypes.c_uint64(out.data_ptr()), ctypes.c_uint32(iters)], (out,))
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
