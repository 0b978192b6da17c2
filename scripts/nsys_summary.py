#!/usr/bin/env python3
"""Markdown tables from the CSV summaries of `nsys stats --format csv` (nvtx_sum, cuda_api_sum,
osrt_sum): for each, the rows that took the most time, with their count, median, average and
longest time in microseconds, and the count per copy: the copies are the instances of the NVTX
range `mtc:start_copy` (one per start_copy call, the engine's own range) unless --copies says.

`nsys stats` sums every call of the process: the benchmark's untimed set-up and warm-up copies
count too, so a call made a few times only (an allocation of the pools) shows as such, and the
medians belong to the calls made once per copy. The OS runtime summary holds only the calls that
nsys traced (those that blocked, mostly): a lock that never waited does not appear.

    python3 scripts/nsys_summary.py [--title TEXT | --no-title] [--copies N] [--top N] CSV [CSV...]

Given no nvtx_sum file (or one without that range) and no --copies, no count per copy.

Each CSV's kind comes from its name (..._nvtx_sum.csv, ..._cuda_api_sum.csv, ..._osrt_sum.csv).
Exit status: 0, or 2 for a file that is missing, of no known kind, or without the columns.
"""

import argparse
import csv
import sys
from pathlib import Path

KINDS = {  # file suffix: (heading, the column that counts, the column that names)
    "nvtx_sum": ("NVTX ranges", "Instances", "Range"),
    "cuda_api_sum": ("CUDA API calls", "Num Calls", "Name"),
    "osrt_sum": ("OS runtime calls traced (those that blocked)", "Num Calls", "Name"),
}
TIMES = ("Total Time (ns)", "Med (ns)", "Avg (ns)", "Max (ns)")
COPY_RANGE = "mtc:start_copy"


def kind_of(path):
    for suffix in KINDS:
        if path.stem.endswith(suffix):
            return suffix
    return None


def copies_in(path):
    """The instances of the range mtc:start_copy in an nvtx_sum CSV; 0 when it has none."""
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r.get("Range") == COPY_RANGE:
                return int(float(r["Instances"]))
    return 0


def table(path, kind, copies, top):
    heading, count_column, name_column = KINDS[kind]
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    needed = (count_column, name_column) + TIMES
    if rows and any(column not in rows[0] for column in needed):
        raise ValueError(f"{path}: expected the columns {', '.join(needed)}")
    rows.sort(key=lambda r: float(r["Total Time (ns)"]), reverse=True)
    per_copy = f" | per copy ({copies})" if copies else ""
    lines = [f"**{heading}** ({path.name})", "",
             f"| name | count{per_copy} | median (us) | average (us) | longest (us) | total (ms) |",
             "|---|---:|" + ("---:|" if copies else "") + "---:|---:|---:|---:|"]
    for r in rows[:top]:
        count = int(float(r[count_column]))
        per = f" | {count / copies:.2f}" if copies else ""
        us = [float(r[c]) / 1e3 for c in TIMES]
        lines.append(f"| {r[name_column]} | {count}{per} | {us[1]:.1f} | {us[2]:.1f} | {us[3]:.1f} "
                     f"| {us[0] / 1e3:.2f} |")
    if not rows:
        lines.append("| (none) |" + " |" * (6 if copies else 5))
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", nargs="+", type=Path)
    parser.add_argument("--title", default="Nsight Systems summary")
    parser.add_argument("--no-title", action="store_true", help="no heading (the caller wrote one)")
    parser.add_argument("--copies", type=int, default=0, help="copies the process made, for calls per copy")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    out = [] if args.no_title else [f"### {args.title}", ""]
    for path in args.csv:
        if kind_of(path) is None or not path.is_file():
            print(f"nsys_summary: {path}: no such file of a known kind "
                  f"(*_{', *_'.join(KINDS)}.csv)", file=sys.stderr)
            return 2
    try:
        copies = args.copies or next(filter(None, (copies_in(p) for p in args.csv
                                                    if kind_of(p) == "nvtx_sum")), 0)
        for path in args.csv:
            out.append(table(path, kind_of(path), copies, args.top))
    except (ValueError, KeyError, csv.Error) as e:
        print(f"nsys_summary: {e}", file=sys.stderr)
        return 2
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
