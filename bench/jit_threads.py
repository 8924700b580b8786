#!/usr/bin/env python3
"""jit_threads.py - how the CUDA driver compiles several PTX modules at once
(GPU machine; no libtilert needed). Loads the given PTX files into device 0's
primary context with cuModuleLoadDataEx, in the mode given:

    serial    one after another from one thread
    threads   one thread per module, each with the context current
    ptxas     one ptxas process per module (-arch=sm_XY[a], the device's),
              in parallel, then the cubins loaded

and prints each load's start and end. Run with CUDA_CACHE_DISABLE=1 (or a
fresh CUDA_CACHE_PATH) for a cold JIT cache:
    CUDA_CACHE_DISABLE=1 python3 bench/jit_threads.py threads A.ptx B.ptx ...
On the H200 (driver 580.159.04, CUDA 13.0), four sm_90a GEMM candidates:
serial 1.95-2.01 s, threads 2.09-2.18 s (each load ends about 0.5 s after
the one before: the driver compiles one module at a time), ptxas 0.51-0.59
s (cubin loads 1 ms); tilec.Tuned makes its candidates' code the third way.
"""
import ctypes
import os
import subprocess
import sys
import tempfile
import threading
import time


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("serial", "threads", "ptxas"):
        print(__doc__)
        return 2
    mode, files = sys.argv[1], sys.argv[2:]
    ptx = [open(f, "rb").read() + b"\0" for f in files]
    cu = ctypes.CDLL("libcuda.so.1")
    t0 = time.perf_counter()
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    major, minor = ctypes.c_int(), ctypes.c_int()
    if cu.cuInit(0) or cu.cuDeviceGet(ctypes.byref(dev), 0) or \
            cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) or cu.cuCtxSetCurrent(ctx) or \
            cu.cuDeviceGetAttribute(ctypes.byref(major), 75, dev) or \
            cu.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev):
        print("no CUDA device")
        return 1
    print("CUDA up in %.3f s; CUDA_CACHE_DISABLE=%s CUDA_CACHE_PATH=%s" % (
        time.perf_counter() - t0, os.environ.get("CUDA_CACHE_DISABLE"), os.environ.get("CUDA_CACHE_PATH")))
    res = [None] * len(ptx)
    start = time.perf_counter()

    def load(data, i):
        cu.cuCtxSetCurrent(ctx)
        m = ctypes.c_void_p()
        s = time.perf_counter()
        r = cu.cuModuleLoadDataEx(ctypes.byref(m), ctypes.c_char_p(data), 0, None, None)
        e = time.perf_counter()
        res[i] = "%s: status %d, %.3f .. %.3f s (%.3f s)" % (files[i], r, s - start, e - start, e - s)

    if mode == "serial":
        for i, p in enumerate(ptx):
            load(p, i)
    elif mode == "threads":
        th = [threading.Thread(target=load, args=(p, i)) for i, p in enumerate(ptx)]
        for x in th:
            x.start()
        for x in th:
            x.join()
    else:
        arch = "sm_%d%d" % (major.value, minor.value)
        with tempfile.TemporaryDirectory() as d:
            outs = [os.path.join(d, "%d.cubin" % i) for i in range(len(files))]
            procs = []
            for f, o in zip(files, outs):
                a = arch + ("a" if b".target sm_%d%da" % (major.value, minor.value) in open(f, "rb").read() else "")
                procs.append(subprocess.Popen(["ptxas", "-arch=" + a, f, "-o", o]))
            codes = [p.wait() for p in procs]
            mid = time.perf_counter()
            print("ptxas: %.3f s, exit codes %s" % (mid - start, codes))
            for i, o in enumerate(outs):
                load(open(o, "rb").read(), i)
    print("%s: %d modules, %.3f s" % (mode, len(ptx), time.perf_counter() - start))
    for r in res:
        print("   ", r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
