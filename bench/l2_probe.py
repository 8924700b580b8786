"""L2 -> SM read probe on the GPU machine: every thread issues 4 or 8
16-byte loads (ld.global.cg: L2 only, no L1) per round over a buffer small
enough to stay in L2 (default 16 MB, a power of two; pass a larger size
for DRAM), XORs them into one word and writes it (nothing is dropped).
Prints TB/s per configuration. A lower bound, not a ceiling: on the H200
(2026-11-30, bench/RESULTS.md 15:52) its best, 4.5 TB/s, is below the
~6 TB/s that gemm's cp.async copies draw from L2.
  python3 bench/l2_probe.py [MB]"""
import sys
import cupy as cp

SRC = r'''
extern "C" __global__ void l2read(const uint4 *__restrict__ p, unsigned mask, int reps, unsigned *out)
{
    unsigned acc = 0;
    unsigned total = gridDim.x * blockDim.x * UNROLL;
    unsigned base = (blockIdx.x * blockDim.x + threadIdx.x) * UNROLL;
    for (int r = 0; r < reps; r++, base += total) {
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];"
                         : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w) : "l"(p + ((base + u) & mask)));
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
'''


def main():
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 16   # a power of two
    n16 = mb * (1 << 20) // 16
    buf = cp.random.randint(0, 1 << 30, size=n16 * 4, dtype=cp.uint32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    print("L2 read probe: %d MB buffer, %d SMs" % (mb, sms))
    print("unroll threads blocks/SM   TB/s")
    best = 0.0
    for unroll in (4, 8):
        k = cp.RawKernel(SRC.replace("UNROLL", str(unroll)), "l2read")
        for threads, per_sm in ((256, 4), (256, 8), (512, 4), (1024, 2)):
            blocks = sms * per_sm
            out = cp.zeros(blocks * threads, dtype=cp.uint32)
            reps = 256
            args = (buf, cp.uint32(n16 - 1), cp.int32(reps), out)
            k((blocks,), (threads,), args)
            cp.cuda.Device().synchronize()
            start, end = cp.cuda.Event(), cp.cuda.Event()
            times = []
            for _ in range(5):
                start.record()
                k((blocks,), (threads,), args)
                end.record()
                end.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
            t = sorted(times)[len(times) // 2]
            tbs = reps * blocks * threads * unroll * 16 / t / 1e12
            best = max(best, tbs)
            print("%6d %7d %9d %7.2f" % (unroll, threads, per_sm, tbs))
    print("best L2 read bandwidth: %.2f TB/s" % best)


if __name__ == "__main__":
    main()
