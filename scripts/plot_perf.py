#!/usr/bin/env python3
"""Draws the test/perf benchmarks' CSV output as PNG curves.

    scripts/plot_perf.py [-o OUTDIR] FILE.csv|DIR ...

Each input is the output of a benchmark run with --csv (a directory stands for
every *.csv in it, such as the one scripts/compare_oshmem.sh --csv-dir keeps).
Runs of the same benchmark (by implementation and PE count) share one figure,
OUTDIR/<benchmark>.png: size on a log2 axis for size-keyed benchmarks, bars
for the others (atomic operations, barrier). Without matplotlib it says so and
exits 0, so it can sit in scripts that also run where matplotlib is missing.
"""

import argparse
import collections
import os
import sys


def read_run(path):
    """Returns (benchmark, label, key_name, value_names, rows) or None."""
    with open(path, encoding="utf-8") as f:
        lines = [ln.strip() for ln in f if ln.strip()]
    if not lines:
        return None  # a run that was skipped or failed
    if len(lines) < 2 or not lines[0].startswith("# "):
        print(f"plot_perf: {path}: not a benchmark CSV (no '# name,impl,pes' line)",
              file=sys.stderr)
        return None
    meta = lines[0][2:].split(",")
    if len(meta) < 3:
        print(f"plot_perf: {path}: bad first line '{lines[0]}'", file=sys.stderr)
        return None
    name, impl, pes = meta[0], ",".join(meta[1:-1]), meta[-1]
    header = lines[1].split(",")
    rows = []
    for ln in lines[2:]:
        if ln.startswith("#"):
            continue
        cells = ln.split(",")
        try:
            rows.append((cells[0], [float(c) for c in cells[1:]]))
        except ValueError:
            print(f"plot_perf: {path}: skipping bad row '{ln}'", file=sys.stderr)
    return name, f"{impl}, {pes} PEs", header[0], header[1:], rows


def inputs(paths):
    for p in paths:
        if os.path.isdir(p):
            for f in sorted(os.listdir(p)):
                if f.endswith(".csv"):
                    yield os.path.join(p, f)
        else:
            yield p


def axis_label(column):
    units = {"latency_us": "latency (µs)", "bandwidth_mbs": "bandwidth (MB/s)",
             "rate_kmsgs": "message rate (thousands/s)"}
    return units.get(column, column)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--outdir", default=".", help="where the PNGs go (default .)")
    ap.add_argument("inputs", nargs="+", help="benchmark CSV files or directories")
    args = ap.parse_args()

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_perf: matplotlib is not installed; no plots drawn "
              "(install python3-matplotlib to get them)")
        return 0

    runs = collections.defaultdict(list)
    for path in inputs(args.inputs):
        run = read_run(path)
        if run is not None and run[4]:
            runs[run[0]].append(run[1:])
    if not runs:
        print("plot_perf: no benchmark data found", file=sys.stderr)
        return 1

    os.makedirs(args.outdir, exist_ok=True)
    for name, group in sorted(runs.items()):
        key_name, value_names = group[0][1], group[0][2]
        column = value_names[0]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        if key_name == "size":
            for label, _, _, rows in group:
                ax.plot([int(k) for k, _ in rows], [v[0] for _, v in rows],
                        marker="o", markersize=3, label=label)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("message size (bytes)")
        else:
            keys = list(dict.fromkeys(k for _, _, _, rows in group for k, _ in rows))
            width = 0.8 / len(group)
            for i, (label, _, _, rows) in enumerate(group):
                values = dict((k, v[0]) for k, v in rows)
                ax.bar([j + i * width for j in range(len(keys))],
                       [values.get(k, 0.0) for k in keys], width, label=label)
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))])
            ax.set_xticklabels(keys)
            ax.set_xlabel(key_name)
        ax.set_ylabel(axis_label(column))
        ax.set_title(name)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend()
        out = os.path.join(args.outdir, f"{name}.png")
        fig.tight_layout()
        fig.savefig(out, dpi=120)
        plt.close(fig)
        print(f"plot_perf: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
