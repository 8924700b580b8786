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


def interleaved(fns, rounds, peer, flop, label, width=28):
    """A/B timing: fns is [(name, fn)] with the peer's name among them; in
    each of `rounds` rounds every fn runs in a fresh random order (3 warm-up
    calls, then 20 timed back to back). Prints the peer's mean TFLOP/s
    (flop per call) under `label`, then each other fn's mean TFLOP/s and its
    ratio to the peer per round (median, range)."""
    import random
    import statistics
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    t = {n: [] for n, _ in fns}
    for _ in range(rounds):
        order = fns[:]
        random.shuffle(order)
        for n, f in order:
            for _ in range(3):
                f()
            ev[0].record()
            for _ in range(20):
                f()
            ev[1].record()
            torch.cuda.synchronize()
            t[n].append(ev[0].elapsed_time(ev[1]) / 20)
    print(f"-- {label}: {rounds} rounds; {peer} {flop / statistics.mean(t[peer]) / 1e9:.1f} TFLOP/s")
    for n, _ in fns:
        if n == peer:
            continue
        ratio = [c / x for c, x in zip(t[peer], t[n])]
        print(f"   {n:{width}s} {flop / statistics.mean(t[n]) / 1e9:7.1f} TFLOP/s  x {peer} per round: median "
              f"{statistics.median(ratio):.3f} ({min(ratio):.3f}-{max(ratio):.3f})", flush=True)


def ab_args(argv, load):
    """The A/B scripts' command line: `R "shape" ... -- A.ptx ...` or
    `--check "shape" ... -- A.ptx ...`. Returns (check_only, rounds,
    shapes as int tuples, [(name, load(path))])."""
    check_only = argv[0] == "--check"
    cut = argv.index("--")
    shapes = [tuple(int(x) for x in s.split()) for s in argv[1:cut]]
    kernels = [(p.rsplit("/", 1)[-1][:-4], load(p)) for p in argv[cut + 1:]]
    return check_only, 0 if check_only else int(argv[0]), shapes, kernels


def run_timed(main):
    """A benchmark script's entry: main()'s status as the exit status, the
    whole run's wall time printed last."""
    import sys
    import time
    t0 = time.time()
    r = main()
    print("total %.0f s" % (time.time() - t0))
    sys.exit(r)
