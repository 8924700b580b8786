#!/usr/bin/env python3
"""GPU test of the Python package with PyTorch tensors: loads the hand-written
reference PTX (tests/gpu/vector_add_ref.*) through tilec.load and launches it.
Exits 77 without torch or a CUDA device. Run: python3 tests/gpu/test_python_torch.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

try:
    import torch
except ImportError:
    print("skipped: no torch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: no CUDA device")
    sys.exit(77)
import tilec  # noqa: E402

failures = []


def check(name, cond, detail=""):
    print("%s %s%s" % ("ok  " if cond else "FAIL", name, (": " + str(detail)) if not cond else ""))
    if not cond:
        failures.append(name)


def expect_launch_error(name, fn, want):
    try:
        fn()
    except tilec.LaunchError as e:
        check(name, want in str(e), e)
        return
    check(name, False, "no LaunchError")


def main():
    mod = tilec.load_files(os.path.join(HERE, "vector_add_ref.ptx"))
    k = mod.vadd
    arch = tilec.device_arch()
    cap = torch.cuda.get_device_capability()
    check("device_arch", arch == {(9, 0): "sm_90a", (10, 0): "sm_100a"}.get(cap, arch), arch)
    for n in (1, 1000, 1 << 20):
        x = torch.randn(n, device="cuda")
        y = torch.randn(n, device="cuda")
        z = torch.full((n,), float("nan"), device="cuda")
        k(x, y, z, 2.0)
        torch.cuda.synchronize()
        check("vadd n=%d" % n, torch.equal(z, torch.addcmul(x, y, torch.tensor(2.0, device="cuda"))),
              (z - (x + 2 * y)).abs().max().item())
    # the packed path of a loaded kernel (tilec._Fast): new outputs, sizes,
    # scalars of either kind, each launch right; the runtime's errors come
    # through it as through the general path
    check("packed path set up", k._fast is not None)
    for n in (1000, 4096, 1000):
        x = torch.randn(n, device="cuda")
        y = torch.randn(n, device="cuda")
        for alpha in (2.0, 3, True):
            z = torch.full((n,), float("nan"), device="cuda")
            k(x, y, z, alpha)
            torch.cuda.synchronize()
            check("packed path n=%d alpha=%r" % (n, alpha),
                  torch.equal(z, torch.addcmul(x, y, torch.tensor(float(alpha), device="cuda"))))
    expect_launch_error("in place refused (packed path)", lambda: k(x, y, x, 1.0),
                        "param Z (written by the kernel) starts at the same address as param X")
    expect_launch_error("overlap refused (packed path)", lambda: k(x[:500], y[:500], x[499:999], 1.0),
                        "param Z (written by the kernel) overlaps param X")
    k(x, x, z, 1.0)    # inputs may share memory
    torch.cuda.synchronize()
    check("inputs sharing memory", torch.equal(z, x + x))
    # an explicit side stream, and a tensor that requires grad
    s = torch.cuda.Stream()
    x = torch.randn(4096, device="cuda", requires_grad=True)
    y = torch.randn(4096, device="cuda")
    z = torch.empty(4096, device="cuda")
    torch.cuda.synchronize()
    with torch.no_grad():
        k(x, y, z, 1, stream=s)
    s.synchronize()
    check("side stream + requires_grad", torch.equal(z, (x + y).detach()))
    # a side stream made torch's current stream: the launch goes to it
    # (DLTensors built from the tensors directly) and is ordered after the
    # work queued there before it
    xs = torch.randn(1 << 20, device="cuda")
    zs = torch.full_like(xs, float("nan"))
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        ys = xs * 3        # queued on s, read by the kernel right after
        k(xs, ys, zs, 0.5)
        zc = zs.clone()    # queued on s after the kernel
    s.synchronize()
    check("current side stream", torch.equal(zc, xs + 0.5 * (xs * 3)))
    if torch.cuda.device_count() > 1:
        # tensors on cuda:1 while cuda:0 is current
        with torch.cuda.device(0):
            x1 = torch.randn(5000, device="cuda:1")
            z1 = torch.empty_like(x1)
            k(x1, x1, z1, 1.0)
            torch.cuda.synchronize(1)
        check("second device", torch.equal(z1, x1 * 2))
    else:
        print("skip second device (one GPU)")
    # a strided (sliced) 1-D view has innermost stride 2
    big = torch.randn(2000, device="cuda")
    expect_launch_error("strided view rejected", lambda: k(big[::2], big[::2], big[::2], 1.0),
                        "param X: innermost stride is 2 but the kernel needs 1")
    expect_launch_error("cpu tensor rejected", lambda: k(torch.zeros(4), y[:4], z[:4], 1.0),
                        "param X: tensor is in CPU memory")
    expect_launch_error("dtype", lambda: k(y.half(), y, z, 1.0),
                        "param X: tensor dtype is float16 but the kernel wants f32[N]")
    # an offset view: byte_offset or data pointer moved by 4 bytes, still aligned to 4
    z2 = torch.zeros(4097, device="cuda")
    k(x.detach(), y, z2[1:], 1.0)
    torch.cuda.synchronize()
    check("offset view", torch.equal(z2[1:], (x + y).detach()) and z2[0].item() == 0)
    if cap[0] >= 9:
        z = torch.zeros(5000, device="cuda")
        one = torch.ones(5000, device="cuda")
        mod.vadd_c2(one, one, z, 3.0)
        torch.cuda.synchronize()
        check("cluster launch + 64 KiB smem", bool(torch.all(z == 4)))
    # an empty grid launches nothing
    e = torch.empty(0, device="cuda")
    k(e, e, e, 1.0)
    check("empty launch", True)
    print("%d failure(s)" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
