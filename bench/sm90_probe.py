"""sm90_probe.py - launch a warp-specialized sm_90a GEMM PTX (tensor maps as
__grid_constant__ params) straight through the driver API, check it against
torch and time it against cuBLAS in the same run.

usage: python3 sm90_probe.py KERNEL.ptx KERNEL.meta [M N K ...]
The metadata gives threads, shared memory, and the `tmap` records (tensor
param, swizzle, box) that say which maps follow the dims."""
import ctypes, sys, torch

cu = ctypes.CDLL("libcuda.so.1")

def ck(r, what):
    if r != 0:
        s = ctypes.c_char_p()
        cu.cuGetErrorString(r, ctypes.byref(s))
        raise RuntimeError(f"{what}: CUDA error {r} {s.value}")

def meta(path):
    m = {"tmaps": []}
    for ln in open(path):
        t = ln.split()
        if not t: continue
        if t[0] in ("kernel", "threads", "smem"): m[t[0]] = t[1] if t[0] == "kernel" else int(t[1])
        if t[0] == "tmap":
            m["tmaps"].append((t[1], {"none": 0, "32": 1, "64": 2, "128": 3}[t[3]], [int(x) for x in t[5:]]))
    return m

DT = {torch.bfloat16: 9, torch.float16: 6, torch.float32: 7}

def encode(x, box, swz):
    tm = (ctypes.c_uint8 * 128)()
    r = x.dim()
    gdim = (ctypes.c_uint64 * r)(*[x.shape[r - 1 - i] for i in range(r)])
    gstr = (ctypes.c_uint64 * max(1, r - 1))(*[x.stride(r - 2 - i) * x.element_size() for i in range(r - 1)])
    bdim = (ctypes.c_uint32 * r)(*[box[r - 1 - i] for i in range(r)])
    est = (ctypes.c_uint32 * r)(*([1] * r))
    ck(cu.cuTensorMapEncodeTiled(ctypes.byref(tm), DT[x.dtype], r, ctypes.c_void_p(x.data_ptr()), gdim, gstr,
                                 bdim, est, 0, swz, 3, 0), "cuTensorMapEncodeTiled")
    return tm

def main():
    ptx, mpath = sys.argv[1], sys.argv[2]
    shapes = [int(v) for v in sys.argv[3:]] or [4096, 4096, 4096]
    md = meta(mpath)
    torch.cuda.init(); torch.zeros(1, device="cuda")
    mod = ctypes.c_void_p(); fn = ctypes.c_void_p()
    src = open(ptx, "rb").read() + b"\0"
    log = ctypes.create_string_buffer(8192)
    opts = (ctypes.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, _SIZE_BYTES
    vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(8192))
    r = cu.cuModuleLoadDataEx(ctypes.byref(mod), src, 2, opts, vals)
    if r: print(log.value.decode()); ck(r, "cuModuleLoadDataEx")
    ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, md["kernel"].encode()), "cuModuleGetFunction")
    ck(cu.cuFuncSetAttribute(fn, 8, md["smem"]), "max dynamic smem")
    for i in range(0, len(shapes), 3):
        M, N, K = shapes[i:i + 3]
        A = torch.randn(M, K, device="cuda").bfloat16()
        B = torch.randn(K, N, device="cuda").bfloat16()
        C = torch.full((M, N), float("nan"), device="cuda").bfloat16()
        ts = {"A": A, "B": B, "C": C}
        keep = []
        args = []
        for t in (A, B, C):
            keep += [ctypes.c_void_p(t.data_ptr()), ctypes.c_int64(t.stride(0))]
        keep += [ctypes.c_int32(M), ctypes.c_int32(K), ctypes.c_int32(N)]
        for name, swz, box in md["tmaps"]:
            keep.append(encode(ts[name], box, swz))
        ptrs = (ctypes.c_void_p * len(keep))(*[ctypes.cast(ctypes.byref(k), ctypes.c_void_p) for k in keep])
        grid = ((M + 255) // 256) * ((N + 127) // 128)
        def launch():
            ck(cu.cuLaunchKernel(fn, grid, 1, 1, md["threads"], 1, 1, md["smem"], None, ptrs, None), "launch")
        launch(); torch.cuda.synchronize()
        ref = (A.float() @ B.float())
        err = (C.float() - ref).abs().max().item() / ref.abs().max().item()
        bad = torch.isnan(C.float()).sum().item()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        res = {}
        for rnd in range(3):
            for name, f in (("tilec", launch), ("cublas", lambda: torch.matmul(A, B))):
                for _ in range(3): f()
                ev[0].record()
                for _ in range(20): f()
                ev[1].record(); torch.cuda.synchronize()
                res.setdefault(name, []).append(ev[0].elapsed_time(ev[1]) / 20)
        fl = 2 * M * N * K
        t = min(res["tilec"]); c = min(res["cublas"])
        print(f"M={M} N={N} K={K} maxrelerr={err:.2e} nan={bad} tilec {fl/t/1e9:.1f} TFLOP/s cublas {fl/c/1e9:.1f} ratio {c/t:.3f}")

main()
