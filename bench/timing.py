"""timing.py - how every benchmark here times a GPU function: the median of
triton.testing.do_bench (CUDA events, warm-up first), or, where Triton is
missing, the median of 30 event-timed runs after 5 warm-ups. Milliseconds."""
import torch


def median_ms(fn, rep=200, warmup=25):
    """rep and warmup: milliseconds of timed runs and of runs before them
    (do_bench's own units)."""
    try:
        from triton.testing import do_bench
    except ImportError:
        do_bench = None
    if do_bench:
        return do_bench(fn, warmup=warmup, rep=rep, return_mode="median")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(5):
        fn()
    ts = []
    for _ in range(30):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        ts.append(start.elapsed_time(end))
    return sorted(ts)[len(ts) // 2]
