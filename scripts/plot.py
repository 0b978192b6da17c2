#!/usr/bin/env python3
"""Renders PNG plots from mtc-bench JSON: a report (schema v2) or a comparison (`compare --json`).

    python3 scripts/plot.py INPUT.json [INPUT.json ...] [--out DIR]

From a report:
  NAME-medians.png  the median wall time per strategy, one panel per direction and pattern, with
                    the interval of each median (error bars; log scale);
  NAME-steps.png    the engine's steps (engine.steps_median_us: queued, traverse, submit, outputs),
                    stacked, per engine case;
  NAME-sweep.png    for a report of several sweep points: median time and speedup over `to`
                    against the number of tensors.
From a comparison:
  NAME-compare.png  each case's change with its interval, the threshold band shaded, colored by
                    verdict.
Files go to --out (default: beside each input). Exit status: 0 when every input was plotted,
2 when one is not a v2 report or a comparison.
"""
import argparse
import collections
import json
import math
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt  # noqa: E402

VERDICT_COLORS = {"SAME": "tab:green", "FASTER": "tab:blue", "SLOWER": "tab:red", "UNSURE": "tab:orange"}
STEPS = ("queued", "traverse", "submit", "outputs")


def ok_entries(run):
    return [e for e in run["results"] if e.get("status") == "ok"]


def error_bars(values, lows, highs):
    """Matplotlib's asymmetric yerr from intervals; an unknown bound draws no bar on that side."""
    below = [v - lo if lo is not None else 0.0 for v, lo in zip(values, lows)]
    above = [hi - v if hi is not None else 0.0 for v, hi in zip(values, highs)]
    return [below, above]


def plot_medians(report, path):
    """One panel per (direction, pattern) of the first run: median and interval per strategy."""
    entries = ok_entries(report["runs"][0])
    panels = sorted({(e["direction"], e["pattern"]) for e in entries})
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4), squeeze=False)
    for ax, (direction, pattern) in zip(axes[0], panels):
        chosen = [e for e in entries if e["direction"] == direction and e["pattern"] == pattern]
        names = [e["strategy"] if e["device"] <= 0 else f'{e["strategy"]} #{e["device"]}' for e in chosen]
        medians = [e["wall_s"]["median"] * 1e6 for e in chosen]
        lows = [e["interval_s"]["low"] * 1e6 for e in chosen]
        highs = [e["interval_s"]["high"] * 1e6 if e["interval_s"]["high"] is not None else None for e in chosen]
        ax.bar(range(len(chosen)), medians, color="tab:blue", alpha=0.7)
        ax.errorbar(range(len(chosen)), medians, yerr=error_bars(medians, lows, highs), fmt="none", ecolor="black",
                    capsize=4)
        ax.set_xticks(range(len(chosen)), names, rotation=35, ha="right")
        ax.set_yscale("log")
        ax.set_ylabel("median wall time (us)")
        level = chosen[0]["interval_s"]["level"] if chosen else 0.95
        ax.set_title(f"{direction}, {pattern} (bars: {level:.0%} interval)")
    fig.suptitle(title_of(report))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_steps(report, path):
    """Stacked engine steps per engine case; False when the report has none."""
    rows = []
    for e in ok_entries(report["runs"][0]):
        steps = (e.get("engine") or {}).get("steps_median_us")
        if steps:
            rows.append((f'{e["strategy"]} {e["direction"]} {e["pattern"]}', steps))
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(rows)), 4))
    bottom = [0.0] * len(rows)
    for step in STEPS:
        values = [steps.get(step, 0.0) for _, steps in rows]
        ax.bar(range(len(rows)), values, bottom=bottom, label=step)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_xticks(range(len(rows)), [name for name, _ in rows], rotation=35, ha="right")
    ax.set_ylabel("median per copy (us)")
    ax.set_title("engine steps (engine.steps_median_us)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_sweep(report, path):
    """Time and speedup against the number of tensors over the sweep points; False without a sweep."""
    if len({run["workload"]["tensors"] for run in report["runs"]}) < 2:
        return False
    series = collections.defaultdict(list)
    for run in report["runs"]:
        for e in ok_entries(run):
            series[(e["strategy"], e["direction"], e["pattern"])].append((run["workload"]["tensors"], e))
    fig, (time_ax, speed_ax) = plt.subplots(1, 2, figsize=(11, 4.5))
    for (strategy, direction, pattern), points in sorted(series.items()):
        points.sort(key=lambda p: p[0])
        xs = [x for x, _ in points]
        label = f"{strategy} {direction} {pattern}"
        medians = [e["wall_s"]["median"] * 1e6 for _, e in points]
        lows = [e["interval_s"]["low"] * 1e6 for _, e in points]
        highs = [e["interval_s"]["high"] * 1e6 if e["interval_s"]["high"] is not None else None for _, e in points]
        time_ax.errorbar(xs, medians, yerr=error_bars(medians, lows, highs), marker="o", capsize=3, label=label)
        speedups = [(x, e["speedup_vs_to"]) for x, e in points if e.get("speedup_vs_to") and strategy != "to"]
        if speedups:
            values = [s["estimate"] for _, s in speedups]
            speed_ax.errorbar([x for x, _ in speedups], values,
                              yerr=error_bars(values, [s["low"] for _, s in speedups], [s["high"] for _, s in speedups]),
                              marker="o", capsize=3, label=label)
    for ax in (time_ax, speed_ax):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tensors in the workload")
        ax.grid(True, which="both", alpha=0.3)
        ax.tick_params(which="minor", labelbottom=False, labelleft=False)  # crowded on a log axis
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    time_ax.set_ylabel("median wall time (us)")
    speed_ax.set_ylabel("speedup over `to`")
    fig.suptitle(title_of(report))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_compare(comparison, path):
    """Each case's change in percent with its interval; the threshold band shaded per metric."""
    cases = comparison["cases"]
    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.35 * len(cases) + 1.2)))
    for i, c in enumerate(cases):
        change = (c["ratio"] - 1) * 100
        low = (c["low"] - 1) * 100 if c["low"] is not None else -100.0
        high = (c["high"] - 1) * 100 if c["high"] is not None else math.inf
        shown_high = high if math.isfinite(high) else max(change, 0) + 3 * c["threshold"] * 100
        color = VERDICT_COLORS.get(c["verdict"], "gray")
        ax.plot([low, shown_high], [i, i], color=color, linewidth=2)
        ax.plot([change], [i], marker="o", color=color)
        if not math.isfinite(high):
            ax.annotate("", xy=(shown_high, i), xytext=(change, i), arrowprops={"arrowstyle": "->", "color": color})
        band = c["threshold"] * 100
        # The band is symmetric in log space: [1 / (1 + t), 1 + t].
        ax.fill_betweenx([i - 0.4, i + 0.4], (1 / (1 + c["threshold"]) - 1) * 100, band, color="gray", alpha=0.15)
    labels = [f'{c["config"]} {c["pattern"]} {c["direction"]} {c["strategy"]} {c["metric"]}: {c["verdict"]}'
              for c in cases]
    ax.set_yticks(range(len(cases)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("change, candidate vs baseline (%; shaded: the threshold band)")
    ax.set_title(f'compare ({comparison["method"]}, {comparison["baseline_kind"]} baseline): '
                 + ", ".join(f"{n} {v}" for v, n in comparison["counts"].items() if n))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def title_of(report):
    gpus = report["context"].get("gpus") or []
    device = gpus[0]["name"] if gpus else "CPU only"
    run = report["runs"][0]
    return f'{run["config"]["name"]} on {device} ({report["context"].get("date", "")})'


def plot_file(path, out_dir):
    doc = json.loads(path.read_text())
    stem = out_dir / path.stem
    written = []
    if "compare_version" in doc:
        plot_compare(doc, f"{stem}-compare.png")
        return [f"{stem}-compare.png"]
    if doc.get("schema_version") != 2:
        raise ValueError(f"{path}: neither a schema v2 report nor a compare JSON "
                         f"(schema_version {doc.get('schema_version')!r})")
    plot_medians(doc, f"{stem}-medians.png")
    written.append(f"{stem}-medians.png")
    if plot_steps(doc, f"{stem}-steps.png"):
        written.append(f"{stem}-steps.png")
    if plot_sweep(doc, f"{stem}-sweep.png"):
        written.append(f"{stem}-sweep.png")
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=pathlib.Path, help="reports or compare JSON files")
    parser.add_argument("--out", type=pathlib.Path, help="folder for the PNG files (default: beside each input)")
    args = parser.parse_args()
    status = 0
    for path in args.inputs:
        out_dir = args.out or path.parent
        out_dir.mkdir(parents=True, exist_ok=True)
        try:
            for written in plot_file(path, out_dir):
                print(written)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"plot: {path}: {e!r}" if isinstance(e, (KeyError, TypeError)) else f"plot: {e}", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
