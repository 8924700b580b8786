"""Attention under compute-sanitizer on the GPU machine: small cases of the
sm_86 variants in .devcarry/attn (the portable path: D=64 with BN 64 and
128, D=128 with BN 64; causal or not; N and NK not multiples of the tiles), each checked
against float32 SDPA, so that the tool sees every path: Q's copy and the
first K/V stage in flight together, the boundary blocks, the masked rows,
and O staged through the dead K/V buffers (these short rows take
tilec.attention's STAGE_O variants, `_so`).
  compute-sanitizer --tool racecheck --kernel-name kns=attention python3 bench/attn_sanitize.py
  compute-sanitizer --tool synccheck --kernel-name kns=attention python3 bench/attn_sanitize.py
  compute-sanitizer --tool memcheck  --kernel-name kns=attention python3 bench/attn_sanitize.py
(TILEC_LIB_DIR: the folder with libtilert.so; PYTHONPATH: python/)."""
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import tilec  # noqa: E402


def main():
    ptx_dir = os.path.join(ROOT, ".devcarry", "attn", "lib")
    torch.manual_seed(0)
    bad = 0
    for d, bn in ((64, 64), (64, 128), (128, 64)):
        for causal in (False, True):
            for n in (130, 200):
                q = torch.randn(1, 2, n, d, device="cuda", dtype=torch.bfloat16)
                k = torch.randn(1, 1, n, d, device="cuda", dtype=torch.bfloat16)
                v = torch.randn(1, 1, n, d, device="cuda", dtype=torch.bfloat16)
                o, lse = tilec.attention(q, k, v, causal=causal, block_m=128, block_n=bn, arch="sm_86",
                                         ptx_dir=ptx_dir)
                torch.cuda.synchronize()
                ref = torch.nn.functional.scaled_dot_product_attention(
                    q.float(), k.float().repeat_interleave(2, 1), v.float().repeat_interleave(2, 1),
                    is_causal=causal)
                err = ((o.float() - ref).norm() / ref.norm()).item()
                ok = err <= 1e-2
                bad += not ok
                print("%s D=%d BN=%d causal=%s N=%d: rel err %.2e" % ("ok  " if ok else "FAIL", d, bn, causal, n, err))
    print("attn_sanitize: %d failed" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
