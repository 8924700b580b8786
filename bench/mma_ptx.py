"""mma_ptx.py - the PTX of the warp-MMA probes (no torch, no GPU): the
loops of bench/mma_probe.py (operands in registers or reloaded with
ldmatrix) and the GEMM mainloop fed by cp.async of bench/gemm_power.py.
tests/lit/bench/probes.tile assembles each with ptxas (`python3 bench/mma_ptx.py
kernel NM NN LDSM` or `fed COPIES` prints one).
"""

MMA = ("  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{c{0},c{1},c{2},c{3}}}, "
       "{{a{4},a{5},a{6},a{7}}}, {{b{8},b{9}}}, {{c{0},c{1},c{2},c{3}}};")


def _step(nm, nn, ldsm):
    """One k16 step of an nm x nn warp tile: (with ldsm) A fragments m and
    B fragment pairs reloaded by ldmatrix from shared memory at sp, then the
    nm x nn mma.sync into accumulators c."""
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
    return body


def _store_sum(nc):
    """After the loop: the sum of the nc accumulators to out[global thread id]."""
    lines = ["  mov.f32 s, 0f00000000;"] + ["  add.f32 s, s, c%d;" % i for i in range(nc)]
    return lines + ["  ld.param.u64 p, [out];", "  mov.u32 i, %ctaid.x;", "  mov.u32 n, %ntid.x;",
                    "  mad.lo.u32 i, i, n, tid;", "  mul.wide.u32 o, i, 4;", "  add.u64 p, p, o;",
                    "  st.global.f32 [p], s;", "  ret;", "}"]


def kernel(nm, nn, ldsm):
    """PTX: nm x nn accumulators per warp; A fragment m, B fragment n."""
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
    lines += ["  ld.param.u32 n, [iters];", "  mov.u32 i, 0;", "L:"] + _step(nm, nn, ldsm)
    lines += ["  add.u32 i, i, 1;", "  setp.lt.u32 q, i, n;", "  @q bra L;"] + _store_sum(nc)
    return ("\n".join(lines) + "\n").encode() + b"\0"


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
    body = _step(nm, nn, True)
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
    lines += ["  add.u32 i, i, 1;", "  setp.lt.u32 q, i, n;", "  @q bra L;", "  cp.async.wait_all;"]
    lines += _store_sum(nc)
    return ("\n".join(lines) + "\n").encode() + b"\0"


if __name__ == "__main__":
    # python3 bench/mma_ptx.py kernel NM NN LDSM(0|1) | fed COPIES: the PTX on stdout
    import sys
    if len(sys.argv) == 5 and sys.argv[1] == "kernel":
        ptx = kernel(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1")
    elif len(sys.argv) == 3 and sys.argv[1] == "fed":
        ptx = fed_kernel(int(sys.argv[2]))
    else:
        sys.exit("usage: mma_ptx.py kernel NM NN LDSM | fed COPIES")
    sys.stdout.buffer.write(ptx.rstrip(b"\0"))
