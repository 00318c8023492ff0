#!/usr/bin/env python3
"""plot_matplotlib.py - the matplotlib side of bench_viz_plot: draws the same
stacked memory timeline (live bytes per allocation site, the allocated and
reserved curves) from the flat event table the benchmark exports, and saves a
PNG of the same size. Prints its own time as `matplotlib_s: x`.

usage: plot_matplotlib.py TABLE.bin OUT.png

The table holds one row per event: float64 time (s), int64 group (-1 for
none), int64 allocated delta, int64 reserved delta (bench_viz_plot.c).
"""
import sys
import time

t0 = time.perf_counter()
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    table, out = sys.argv[1], sys.argv[2]
    rows = np.fromfile(table, dtype=[("t", "<f8"), ("g", "<i8"), ("da", "<i8"), ("dr", "<i8")])
    t = rows["t"] - rows["t"][0]
    groups = sorted(int(g) for g in np.unique(rows["g"]) if g >= 0)
    layers = []
    for g in groups:
        d = np.where(rows["g"] == g, rows["da"], 0)
        layers.append(np.cumsum(d) / 2**30)
    allocated = np.cumsum(rows["da"]) / 2**30
    reserved = np.cumsum(rows["dr"]) / 2**30
    fig, ax = plt.subplots(figsize=(12.8, 7.6), dpi=100)
    ax.stackplot(t, *layers, labels=[f"group {g}" for g in groups])
    ax.plot(t, allocated, color="black", linewidth=1, label="allocated")
    ax.plot(t, reserved, color="#AA3377", linewidth=2, label="reserved")
    peak = int(np.argmax(allocated))
    ax.annotate(f"peak {allocated[peak]:.2f} GiB", (t[peak], allocated[peak]))
    ax.set_xlabel("time since the first event (s)")
    ax.set_ylabel("GiB")
    ax.legend(loc="upper right")
    fig.savefig(out)
    print(f"matplotlib_s: {time.perf_counter() - t0:.3f}")


if __name__ == "__main__":
    main()
