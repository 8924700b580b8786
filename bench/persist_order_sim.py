"""persist_order_sim.py - how evenly a static persistent schedule spreads
causal attention's tiles over the blocks, against the hardware's block
scheduler (greedy: the next block in grid order goes to the first SM that
is free), on the 16k-token grid (hidden 2048, 128 x 128 tiles): a tile of
query block x costs x + 1 key trips plus a per-tile overhead (in trips).
Tile order: groups of G heads, each group's query blocks longest first (the
launch pass's order, G = 256 / X), then the tiles dealt round robin
(block b takes b, b + P, ...), in a snake (odd rounds reversed), or
dynamically (a persistent block takes the next tile when it is free: an
atomic tile counter, the hardware's greedy order at the persistent
overhead).
Prints, per row and G, the longest block's work over the mean (1.0 =
perfect): a model, not a measurement; bench/RESULTS.md 2026-12-08 00:20.

usage: python3 persist_order_sim.py [P] [persistent overhead] [one-tile overhead]"""
import heapq
import sys


def tiles(X, Y, G):
    out = []
    for t in range(X * Y):
        grp = t // (G * X)
        r = t - grp * G * X
        gg = min(G, Y - grp * G)
        out.append(X - r // gg)
    return out


def static(L, P, snake, ovh):
    load = [0.0] * P
    for t, work in enumerate(L):
        n, i = divmod(t, P)
        load[(P - 1 - i) if (snake and n % 2) else i] += work + ovh
    return max(load)


def greedy(L, P, ovh):
    h = [(0.0, b) for b in range(P)]
    for work in L:
        f, b = heapq.heappop(h)
        heapq.heappush(h, (f + work + ovh, b))
    return max(f for f, _ in h)


def main():
    P = int(sys.argv[1]) if len(sys.argv) > 1 else 132
    po = float(sys.argv[2]) if len(sys.argv) > 2 else 0.3
    oo = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    print("P %d, overhead a tile: persistent %.1f trips, one tile a block %.1f" % (P, po, oo))
    print("%6s %5s %12s %8s %8s %18s" % ("N", "G", "round robin", "snake", "dynamic", "hardware, one tile"))
    for N in (1024, 2048, 4096, 8192, 16384):
        X, Y = N // 128, 16384 // N * 16
        for G in sorted({min(Y, max(1, 256 // X)), min(Y, max(1, 1024 // X)), Y}):
            L = tiles(X, Y, G)
            ideal = sum(L) / P
            print("%6d %5d %12.3f %8.3f %8.3f %18.3f" % (N, G, static(L, P, False, po) / ideal,
                                                          static(L, P, True, po) / ideal, greedy(L, P, po) / ideal,
                                                          greedy(L, P, oo) / ideal))


if __name__ == "__main__":
    main()
