"""One attention forward launch pattern for Nsight Compute, bf16, 16384
tokens, hidden 2048 (Z = 16384 / N), D and N and causal from the command
line; three launches (profile the third). WHO: flash (SDPA's flash
backend), tilec (the sm_86 PTX tile that bench/attn_bench.py reports as the
portable path, from .devcarry/attn) or the path of a .ptx file (+ .meta) of
the example's kernel.
  ncu --metrics smsp__inst_executed.sum,gpu__time_duration.sum,launch__grid_size \\
      -k regex:'attention|flash' --launch-skip 2 --launch-count 1 \\
      python3 bench/attn_ncu.py WHO D N causal
(TILEC_LIB_DIR: the folder with libtilert.so.) bench/attn_stalls.sh runs it
for a table of warp stalls."""
import os
import sys

import torch
from torch.nn.attention import SDPBackend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import tilec  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_bench  # noqa: E402 (bench/attn_bench.py: the portable path's pick)


def main():
    who, d, n, causal = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] in ("1", "yes", "true")
    z, h = 16384 // n, 2048 // d
    q, k, v = (torch.randn(z, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(z, h, n, device="cuda")
    if who.endswith(".ptx"):
        mod = tilec.load_files(who)
    elif who != "flash":
        mod = attn_bench.portable_pick(d, causal, n)[1]
    for _ in range(3):
        if who == "flash":
            attn_bench.sdpa(q, k, v, causal, SDPBackend.FLASH_ATTENTION)
        else:
            mod(q, k, v, o, lse, d ** -0.5)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
