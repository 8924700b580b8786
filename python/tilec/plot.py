"""tilec.plot - charts of measured kernels, written as PNG files.

    from tilec import plot
    plot.perf_report(rows, x="N", y="TFLOP/s", line="kernel", panel="D", path="attn.png")
    plot.roofline(points, "roofline.png", peak_tflops=1070.5, dram_gbs=4800)

matplotlib is imported (with its file-only Agg backend) when a function
runs, never by `import tilec` or `import tilec.plot`: the package works
without it, and a function raises ImportError naming it when it is
missing. docs/python.md, "Charts".
"""
import math

__all__ = ["perf_report", "roofline"]


def _pyplot():
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("tilec.plot needs matplotlib (pip install matplotlib, or Debian's "
                          "python3-matplotlib)") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(plt, fig, path, title):
    """The figure's title (if any), laid out, written to path and closed;
    returns path."""
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _key(v):
    """Sort numbers by value, then everything else by its text."""
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


def perf_report(rows, x, y, line, path, panel=None, title=None, xlabel=None, ylabel=None, logx=None,
                hlines=None, ncols=None, peers=()):
    """A line chart per panel, like triton.testing.perf_report's: rows is a
    list of dicts (one measurement each); every distinct row[line] is a
    line through its points (row[x], row[y]), sorted by x; with panel, one
    subplot per distinct row[panel] (a tuple of keys: their values joined).
    x values that are all numbers give a numeric axis (log2 when logx, the
    default for positive numbers spanning more than a factor 4); otherwise
    the x values are categories in first-seen order. Rows whose y is None
    or NaN are left out. hlines: {label: y} drawn across every panel
    (a ceiling); peers: line names drawn dashed (the libraries compared
    against). A line keeps its color in every panel. Writes a PNG to path
    and returns path."""
    plt = _pyplot()
    keys = tuple(panel) if isinstance(panel, (tuple, list)) else (panel,) if panel else ()
    keyf = lambda r: tuple(r.get(k) for k in keys)  # noqa: E731
    good = [r for r in rows if r.get(y) is not None and r[y] == r[y]]
    seen = []
    for r in good:
        if keyf(r) not in seen:
            seen.append(keyf(r))
    # panels by value where their keys are numbers (D = 64 before 128), else in the rows' order
    panels = sorted(seen, key=lambda t: tuple(_key(v) if isinstance(v, (int, float)) else (1, 0, "")
                                              for v in t)) or [()]
    names = sorted({r[line] for r in good}, key=_key)
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    color = {name: cmap(i % cmap.N) for i, name in enumerate(names)}   # one color a line in every panel
    n = len(panels)
    cols = ncols or min(n, 2)
    nrows = (n + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(6.4 * cols, 4.2 * nrows), squeeze=False)
    for i, pv in enumerate(panels):
        ax = axes[i // cols][i % cols]
        prow = [r for r in good if keyf(r) == pv]
        xs = [r[x] for r in prow]
        numeric = all(isinstance(v, (int, float)) for v in xs)
        cats = []
        if not numeric:
            for v in xs:
                if v not in cats:
                    cats.append(v)
        for name in [v for v in names if any(r[line] == v for r in prow)]:
            pts = [(r[x], r[y]) for r in prow if r[line] == name]
            if numeric:
                pts.sort()
                xv = [p[0] for p in pts]
            else:
                pts.sort(key=lambda p: cats.index(p[0]))
                xv = [cats.index(p[0]) for p in pts]
            ax.plot(xv, [p[1] for p in pts], marker="o", markersize=4, color=color[name], label=str(name),
                    linestyle="--" if name in peers else "-")
        for label, v in (hlines or {}).items():
            ax.axhline(v, color="gray", linestyle="--", linewidth=1)
            ax.annotate(label, (0.01, v), xycoords=("axes fraction", "data"), fontsize=7, color="gray",
                        va="bottom")
        if numeric and xs:
            lx = logx if logx is not None else (min(xs) > 0 and max(xs) / min(xs) > 4)
            if lx:
                ax.set_xscale("log", base=2)
            vals = sorted(set(xs))
            if len(vals) <= 12:
                ax.set_xticks(vals)
                ax.set_xticklabels([str(v) for v in vals])
        elif cats:
            ax.set_xticks(range(len(cats)))
            ax.set_xticklabels([str(c) for c in cats], rotation=30, ha="right", fontsize=7)
        ax.set_xlabel(xlabel or x)
        ax.set_ylabel(ylabel or y)
        top = max([r[y] for r in prow] + list((hlines or {}).values()) + [0])
        ax.set_ylim(0, top * 1.12 if top > 0 else 1)
        ax.grid(True, alpha=0.3)
        if keys:
            ax.set_title(", ".join("%s = %s" % kv for kv in zip(keys, pv)), fontsize=10)
        ax.legend(fontsize=7, loc="best")
    for j in range(n, nrows * cols):
        axes[j // cols][j % cols].axis("off")
    return _save(plt, fig, path, title)


def roofline(points, path, peak_tflops, dram_gbs, title=None, peak_label="tensor cores"):
    """A roofline chart (left) and the DRAM bandwidth reached (right).

    points: dicts with name, flops (FLOPs of one launch), predicted_us and
    predicted_bytes (the prediction: time and DRAM bytes), measured_us
    and measured_bytes (the measurement); measured_* may be missing.
    Left, for the points with FLOPs: arithmetic intensity (FLOP per DRAM
    byte) against TFLOP/s on log axes under the roofs min(peak_tflops,
    dram_gbs x intensity), each kernel's predicted point hollow and its
    measured point filled, joined by a line. Right, for every point with
    bytes: GB/s predicted and measured (bytes / time), the DRAM peak
    dashed. Writes a PNG to path and returns path."""
    plt = _pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13.5, 5.2), gridspec_kw={"width_ratios": [3, 2]})
    cmap = plt.get_cmap("tab20")
    flop_pts = [p for p in points if p.get("flops") and p.get("predicted_bytes") and p.get("predicted_us")]
    xs = []
    for i, p in enumerate(flop_pts):
        c = cmap(i % 20)
        pi = p["flops"] / p["predicted_bytes"]
        pt = p["flops"] / (p["predicted_us"] * 1e6)
        ax.scatter([pi], [pt], facecolors="none", edgecolors=[c], s=55, zorder=3)
        xs.append(pi)
        if p.get("measured_us") and p.get("measured_bytes"):
            mi = p["flops"] / p["measured_bytes"]
            mt = p["flops"] / (p["measured_us"] * 1e6)
            ax.scatter([mi], [mt], color=c, s=40, zorder=3, label=p["name"])
            ax.plot([pi, mi], [pt, mt], color=c, linewidth=0.8)
            xs.append(mi)
        else:
            ax.scatter([], [], color=c, label=p["name"] + " (predicted only)")
    lo = min(xs + [1.0]) / 4
    hi = max(xs + [peak_tflops * 1e3 / dram_gbs]) * 4
    grid = [lo * (hi / lo) ** (k / 200) for k in range(201)]
    ax.plot(grid, [min(peak_tflops, dram_gbs * g / 1e3) for g in grid], color="black", linewidth=1.5)
    ax.annotate("%s %.0f TFLOP/s" % (peak_label, peak_tflops), (hi, peak_tflops), ha="right", va="bottom",
                fontsize=8)
    ax.annotate("DRAM %.0f GB/s" % dram_gbs, (lo * 1.2, dram_gbs * lo * 1.2 / 1e3), rotation=0, fontsize=8,
                va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / DRAM byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("roofline: hollow = predicted, filled = measured", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    bw = [p for p in points if p.get("predicted_bytes") and p.get("predicted_us")]
    names = [p["name"] for p in bw]
    pred = [p["predicted_bytes"] / (p["predicted_us"] * 1e3) for p in bw]
    meas = [p["measured_bytes"] / (p["measured_us"] * 1e3) if p.get("measured_us") and p.get("measured_bytes")
            else float("nan") for p in bw]
    ys = range(len(bw))
    bx.barh([v + 0.2 for v in ys], pred, height=0.38, color="lightgray", edgecolor="gray", label="predicted")
    bx.barh([v - 0.2 for v in ys], [0 if math.isnan(v) else v for v in meas], height=0.38, color="tab:blue",
            label="measured")
    bx.axvline(dram_gbs, color="black", linestyle="--", linewidth=1)
    bx.set_yticks(list(ys))
    bx.set_yticklabels(names, fontsize=8)
    bx.invert_yaxis()
    bx.set_xlabel("DRAM GB/s (bytes / time)")
    bx.set_title("DRAM bandwidth, peak %.0f GB/s dashed" % dram_gbs, fontsize=10)
    bx.legend(fontsize=8, loc="lower right")
    bx.grid(True, axis="x", alpha=0.3)
    return _save(plt, fig, path, title)
