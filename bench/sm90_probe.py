"""sm90_probe.py - launch tilec's warp-specialized sm_90a kernels (tensor
maps as __grid_constant__ params after the dims) straight through the
driver API, check them against torch and time them against the torch
peers (cuBLAS; SDPA cuDNN and flash) in the same run, interleaved.

usage: python3 sm90_probe.py gemm GEMM.ptx [M N K ...] [--check]
       python3 sm90_probe.py attn ATTN.ptx [Z H N D causal ...] [--check]
--check: correctness only, no timing (nothing but tilec's kernel and the
reference run: for compute-sanitizer, whose tools would also report on
the peers' kernels).
Each PTX has its .meta beside it: threads, shared memory, params, dims,
the grid rule and the `tmap` records (tensor param, swizzle, box)."""
import ctypes, math, sys, torch
import torch.nn.functional as F

cu = ctypes.CDLL("libcuda.so.1")

def ck(r, what):
    if r != 0:
        s = ctypes.c_char_p()
        cu.cuGetErrorString(r, ctypes.byref(s))
        raise RuntimeError(f"{what}: CUDA error {r} {s.value}")

class Kernel:
    def __init__(self, ptx):
        m = {"tmaps": [], "params": [], "dims": []}
        for ln in open(ptx[:-4] + ".meta"):   # the module's first kernel (its fallback follows)
            t = ln.split()
            if not t: continue
            if t[0] == "end": break
            if t[0] == "kernel": m["kernel"] = t[1]
            elif t[0] in ("threads", "smem"): m[t[0]] = int(t[1])
            elif t[0] == "dim": m["dims"].append(t[1])
            elif t[0] == "param": m["params"].append((t[1], t[2], int(t[4]) if t[2] == "tensor" else 0, t[3]))
            elif t[0] == "tmap":
                m["tmaps"].append((t[1], {"none": 0, "32": 1, "64": 2, "128": 3}[t[3]], [int(x) for x in t[5:]]))
            elif t[0] == "grid": m["grid"] = [p.split() for p in " ".join(t[1:]).split(";")]
        self.m = m
        torch.zeros(1, device="cuda")
        self.mod = ctypes.c_void_p(); self.fn = ctypes.c_void_p()
        log = ctypes.create_string_buffer(8192)
        opts = (ctypes.c_int * 2)(5, 6)
        vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(8192))
        r = cu.cuModuleLoadDataEx(ctypes.byref(self.mod), open(ptx, "rb").read() + b"\0", 2, opts, vals)
        if r: print(log.value.decode())
        ck(r, "cuModuleLoadDataEx")
        ck(cu.cuModuleGetFunction(ctypes.byref(self.fn), self.mod, m["kernel"].encode()), "cuModuleGetFunction")
        ck(cu.cuFuncSetAttribute(self.fn, 8, m["smem"]), "max dynamic smem")

    def bind(self, **a):
        m = self.m
        keep, dims = [], {}
        for name, kind, rank, dt in m["params"]:
            x = a[name]
            if kind == "tensor":
                keep.append(ctypes.c_void_p(x.data_ptr()))
                keep += [ctypes.c_int64(x.stride(d)) for d in range(rank - 1)]
            else:
                keep.append(ctypes.c_float(x) if dt == "f32" else ctypes.c_int32(x))
        for d in m["dims"]:
            keep.append(ctypes.c_int32(a["dims"][d]))
        for name, swz, box in m["tmaps"]:
            keep.append(encode(a[name], box, swz))
        self.keep = keep
        self.ptrs = (ctypes.c_void_p * len(keep))(*[ctypes.cast(ctypes.byref(k), ctypes.c_void_p) for k in keep])
        self.g = [rpn(p, a["dims"]) for p in m["grid"]] + [1, 1]

    def __call__(self):
        ck(cu.cuLaunchKernel(self.fn, self.g[0], self.g[1], self.g[2], self.m["threads"], 1, 1, self.m["smem"],
                             None, self.ptrs, None), "launch")

def rpn(toks, dims):
    st = []
    for t in toks:
        if t == "divisor":   # the largest divisor of a that is at most b
            b, a = st.pop(), st.pop()
            st.append(max(d for d in range(1, max(1, min(a, b)) + 1) if a % d == 0))
        elif t in ("+", "-", "*", "/", "%", "min", "max", "cdiv"):
            b, a = st.pop(), st.pop()
            st.append({"+": a + b, "-": a - b, "*": a * b, "/": int(a / b), "%": a % b, "min": min(a, b),
                       "max": max(a, b), "cdiv": (a + b - 1) // b}[t])
        else:
            st.append(dims[t] if t in dims else int(t))
    return st[0]

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

def timeit(fns, rounds=5, reps=10):
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    res = {}
    for _ in range(rounds):
        for name, f in fns:
            for _ in range(2): f()
            ev[0].record()
            for _ in range(reps): f()
            ev[1].record(); torch.cuda.synchronize()
            res.setdefault(name, []).append(ev[0].elapsed_time(ev[1]) / reps)
    return {k: sorted(v)[len(v) // 2] for k, v in res.items()}

def gemm(ptx, shapes):
    k = Kernel(ptx)
    for i in range(0, len(shapes), 3):
        M, N, K = shapes[i:i + 3]
        A = torch.randn(M, K, device="cuda").bfloat16(); B = torch.randn(K, N, device="cuda").bfloat16()
        C = torch.full((M, N), float("nan"), device="cuda").bfloat16()
        k.bind(A=A, B=B, C=C, dims={"M": M, "N": N, "K": K})
        k(); torch.cuda.synchronize()
        ref = A.float() @ B.float()
        err = (C.float() - ref).abs().max().item() / max(ref.abs().max().item(), 1e-30)
        if not err <= 1e-2:
            BAD.append((M, N, K))
        if CHECK:
            print(f"gemm M={M} N={N} K={K} relerr={err:.2e} (checked only)")
            continue
        t = timeit([("tilec", k), ("cublas", lambda: torch.matmul(A, B))])
        fl = 2 * M * N * K
        print(f"gemm M={M} N={N} K={K} relerr={err:.2e} nan={torch.isnan(C.float()).sum().item()} "
              f"tilec {fl/t['tilec']/1e9:.1f} cublas {fl/t['cublas']/1e9:.1f} TFLOP/s ratio {t['cublas']/t['tilec']:.3f}")

def attn(ptx, shapes):
    k = Kernel(ptx)
    from torch.nn.attention import sdpa_kernel, SDPBackend
    for i in range(0, len(shapes), 5):
        Z, H, N, D, causal = shapes[i:i + 5]
        q, kk, v = (torch.randn(Z, H, N, D, device="cuda").bfloat16() for _ in range(3))
        O = torch.full((Z, H, N, D), float("nan"), device="cuda").bfloat16()
        LSE = torch.full((Z, H, N), float("nan"), device="cuda")
        scale = 1.0 / math.sqrt(D)
        k.bind(Q=q, K=kk, V=v, O=O, LSE=LSE, scale=scale, dims={"Z": Z, "H": H, "N": N, "HK": H, "NK": N})
        k(); torch.cuda.synchronize()
        sc = (q.float() @ kk.float().transpose(-1, -2)) * scale   # the reference in plain float32 ops
        if causal:
            sc = sc.masked_fill(torch.ones(N, N, device="cuda", dtype=torch.bool).triu(1), float("-inf"))
        ref = torch.softmax(sc, dim=-1) @ v.float()
        err = (O.float() - ref).abs().max().item()
        rel = err / max(ref.abs().max().item(), 1e-30)
        nan = torch.isnan(O.float()).sum().item() + torch.isnan(LSE).sum().item() * (N > 0)
        if not rel <= 1e-2 or nan:
            BAD.append((Z, H, N, D, causal))
        def sd(b):
            def f():
                with sdpa_kernel(b): F.scaled_dot_product_attention(q, kk, v, is_causal=bool(causal))
            return f
        if CHECK:
            print(f"attn Z={Z} H={H} N={N} D={D} causal={causal} maxerr={err:.2e} rel={rel:.1e} nan={nan} (checked only)")
            continue
        t = timeit([("tilec", k), ("cudnn", sd(SDPBackend.CUDNN_ATTENTION)), ("flash", sd(SDPBackend.FLASH_ATTENTION))])
        fl = 4 * Z * H * N * N * D / (2 if causal else 1)
        print(f"attn Z={Z} H={H} N={N} D={D} causal={causal} maxerr={err:.2e} rel={rel:.1e} nan={nan} "
              f"tilec {fl/t['tilec']/1e9:.1f} cudnn {fl/t['cudnn']/1e9:.1f} flash {fl/t['flash']/1e9:.1f} TFLOP/s "
              f"vs cudnn {t['cudnn']/t['tilec']:.3f} vs flash {t['flash']/t['tilec']:.3f}")

BAD = []
CHECK = "--check" in sys.argv
if __name__ == "__main__":
    {"gemm": gemm, "attn": attn}[sys.argv[1]](sys.argv[2], [int(v) for v in sys.argv[3:] if v != "--check"])
    if BAD:
        print("FAIL:", BAD)
    sys.exit(1 if BAD else 0)
