#!/usr/bin/env python3
"""Per-GPU copy times with several GPUs at once, against one GPU alone, from mtc-bench reports.

    python3 scripts/multi_gpu_summary.py LABEL=REPORT.json [LABEL=REPORT.json ...] [--md OUT.md]
        [--baseline alone] [--strategy engine]

Each LABEL names one way of running (e.g. `alone`: `--devices 0`; `together`: `--devices 0,1` in
one process; `procs`: one process per GPU, started together); a label may be given several times
(repetitions, or one report per process). For each direction, pattern and GPU it prints the
median over the label's reports of each report's median wall time for the strategy, and its ratio
to the baseline label's figure for GPU 0 (or for the same GPU when the baseline has it). The
ratios are the many-GPU targets: per-GPU time within 1.2x (2 and 4 GPUs) or 1.3x (8 GPUs) of one
GPU alone, all from one call. A second table gives each label's spread, to read the first
with: the range of its per-GPU ratios, the range over every report and GPU (the labels run in
different processes, one after another, so a difference smaller than this spread may be the
host's), and the engine's own steps (median over the reports and GPUs, when the reports hold
them). Below, each label's pinned slab allocations
(`cudaHostAlloc`) against its timed copies, flagged when the pool kept allocating: its times then
include allocations a settled pool does not make. Exit status 0, or 2 when a report cannot be
read or the baseline label is missing.
"""
import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_files import write_whole  # noqa: E402


def ok_results(report, strategy):
    """The results of `strategy` in every run of a report that measured it (status ok)."""
    for run in report["runs"]:
        for e in run["results"]:
            if e.get("status") == "ok" and e["strategy"] == strategy:
                yield e


def medians(report, strategy):
    """(direction, pattern, gpu) -> median wall seconds of `strategy`, for each ok result."""
    return {(e["direction"], e.get("pattern", "hot"), e["device"]): e["wall_s"]["median"]
            for e in ok_results(report, strategy)}


STEPS = ("queued", "traverse", "submit", "outputs")


def steps(report, strategy):
    """(direction, pattern, gpu) -> the engine's step medians (us) of `strategy`, where given."""
    return {(e["direction"], e.get("pattern", "hot"), e["device"]): e["engine"]["steps_median_us"]
            for e in ok_results(report, strategy) if "steps_median_us" in e.get("engine", {})}


def pinned_allocations(report, strategy):
    """(slab allocations of the process's pinned pools, timed copies of `strategy`) in a report;
    None for the first when the report does not say. The count is the process's, at the end."""
    allocations, copies = None, 0
    for e in ok_results(report, strategy):
        copies += e.get("samples", 0)
        count = e.get("engine", {}).get("pinned_pool", {}).get("slab_allocations")
        if count is not None:
            allocations = max(allocations or 0, count)
    return allocations, copies


# More slab allocations than this share of the timed copies (and more than a pool needs to
# settle) means the pool did not settle.
KEPT_ALLOCATING_SHARE = 0.01
SETTLING_ALLOCATIONS = 20


def allocation_lines(labelled, strategy):
    totals = {}
    for label, report in labelled:
        allocations, copies = pinned_allocations(report, strategy)
        if allocations is None:
            continue
        done = totals.setdefault(label, [0, 0, 0])
        done[0] += allocations
        done[1] += copies
        done[2] += 1
    lines = []
    for label, (allocations, copies, reports) in totals.items():
        line = (f"- `{label}`: {allocations:,} pinned slab allocations over {copies:,} timed copies"
                f" ({reports} report{'s' if reports != 1 else ''})")
        if allocations > SETTLING_ALLOCATIONS * reports and allocations > KEPT_ALLOCATING_SHARE * copies:
            line += ": **the pinned pool kept allocating; these times include cudaHostAlloc**"
        lines.append(line)
    return lines


def parse_pairs(pairs):
    labelled = []
    for pair in pairs:
        label, sep, path = pair.partition("=")
        if not sep or not label or not path:
            raise ValueError(f"'{pair}' is not LABEL=REPORT.json")
        with open(path, encoding="utf-8") as f:
            labelled.append((label, json.load(f)))
    return labelled


def table(labelled, strategy, baseline):
    # label -> key -> list of per-report medians
    figures = defaultdict(lambda: defaultdict(list))
    order = []
    for label, report in labelled:
        if label not in order:
            order.append(label)
        for key, median in medians(report, strategy).items():
            figures[label][key].append(median)
    if baseline not in figures:
        raise KeyError(f"no report labelled '{baseline}' holds strategy '{strategy}'")
    base = {k: statistics.median(v) for k, v in figures[baseline].items()}
    rows = []
    cases = sorted({(d, p) for label in order for (d, p, _) in figures[label]})
    for direction, pattern in cases:
        for label in order:
            gpus = sorted(g for (d, p, g) in figures[label] if (d, p) == (direction, pattern))
            for gpu in gpus:
                value = statistics.median(figures[label][(direction, pattern, gpu)])
                reference = base.get((direction, pattern, gpu), base.get((direction, pattern, 0)))
                ratio = value / reference if reference else None
                reps = len(figures[label][(direction, pattern, gpu)])
                rows.append((direction, pattern, label, gpu, value, ratio, reps))
    return rows


def spreads(labelled, strategy, baseline, rows):
    """Per (direction, pattern, label): (lowest, highest) per-GPU ratio, (lowest, highest) ratio
    of any one report's GPU, and the median of each engine step over the reports and GPUs."""
    base = {(d, p, g): value for d, p, label, g, value, _, _ in rows if label == baseline}
    out = {}
    for direction, pattern, label, gpu, _, ratio, _ in rows:
        entry = out.setdefault((direction, pattern, label), {"gpus": [], "reports": [], "steps": defaultdict(list)})
        if ratio is not None:
            entry["gpus"].append(ratio)
    for label, report in labelled:
        for (direction, pattern, gpu), median in medians(report, strategy).items():
            entry = out.get((direction, pattern, label))
            reference = base.get((direction, pattern, gpu), base.get((direction, pattern, 0)))
            if entry is not None and reference:
                entry["reports"].append(median / reference)
        for (direction, pattern, _), figures in steps(report, strategy).items():
            entry = out.get((direction, pattern, label))
            if entry is not None:
                for name in STEPS:
                    if name in figures:
                        entry["steps"][name].append(figures[name])
    return out


def spread_lines(spread):
    def span(values):
        return f"{min(values):.2f}-{max(values):.2f}x" if values else "-"

    lines = ["| run | direction | pattern | per GPU | every report and GPU | "
             + " | ".join(f"{name} (us)" for name in STEPS) + " |",
             "|---|---|---|---|---|" + "---|" * len(STEPS)]
    for (direction, pattern, label), entry in spread.items():
        cells = [f"{statistics.median(entry['steps'][name]):.1f}" if entry["steps"][name] else "-"
                 for name in STEPS]
        lines.append(f"| {label} | {direction} | {pattern} | {span(entry['gpus'])} | {span(entry['reports'])} | "
                     + " | ".join(cells) + " |")
    return lines


def render(rows, strategy, baseline, allocations=(), spread_table=()):
    lines = [
        f"Per-GPU median wall time of `{strategy}` (median over the reports of each label) and its"
        f" ratio to `{baseline}` (one GPU alone) in the same call.",
        "",
        "| direction | pattern | run | GPU | median | vs alone | reports |",
        "|---|---|---|---|---|---|---|",
    ]
    for direction, pattern, label, gpu, value, ratio, reps in rows:
        shown = f"{ratio:.2f}x" if ratio is not None else "-"
        lines.append(
            f"| {direction} | {pattern} | {label} | {gpu} | {value * 1e6:,.1f} us | {shown} | {reps} |"
        )
    if spread_table:
        lines += ["", "Each label's spread: its GPUs' ratios, the ratios of every report's GPU, and the"
                  " engine's steps (median over the reports and GPUs).", "", *spread_table]
    if allocations:
        lines += ["", "Pinned slab allocations (each report's process, at its end):", *allocations]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", metavar="LABEL=REPORT.json")
    parser.add_argument("--baseline", default="alone", help="the label of one GPU alone")
    parser.add_argument("--strategy", default="engine")
    parser.add_argument("--md", help="also write the table here")
    args = parser.parse_args()
    try:
        labelled = parse_pairs(args.reports)
        rows = table(labelled, args.strategy, args.baseline)
    except (OSError, ValueError, KeyError) as e:
        print(f"multi_gpu_summary: {e}", file=sys.stderr)
        return 2
    text = render(rows, args.strategy, args.baseline, allocation_lines(labelled, args.strategy),
                  spread_lines(spreads(labelled, args.strategy, args.baseline, rows)))
    sys.stdout.write(text)
    if args.md:
        write_whole([(args.md, text)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
