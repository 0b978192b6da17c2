#!/usr/bin/env python3
"""Compares mtc_engine_bench runs made without and with one environment setting, in processes
taken in turn (without, with, without, with, ...), for settings a process reads once at its start
(GLIBC_TUNABLES, MTC_WORKER_THREADS, ...), which no benchmark can switch inside one process.

Each process gives one median per case (the median of its repetitions' medians). A several-GPU
case (BM_MultiGpuCopy) also gives a row per GPU: its median with every GPU copying over its median
alone (the counters gpuG_us and gpuG_alone_us of one repetition, then the median over the
process's repetitions), the figure the many-GPU targets are set in. The two sides
are compared by those per-process figures only: the ratio of their medians (with / without), and
whether the sides are apart: every process of one side below every process of the other. With n
processes a side and no real difference, that happens by chance with probability 2 / C(2n, n)
(0.10 for 3, 0.029 for 4, 0.008 for 5): the line gives that figure. Sides that are not apart get
"within the spread": no verdict. Processes of one host only; figures of different calls are not
comparable (results/NOTES.md).

    python3 scripts/microbench_env_ab.py SETTING OUT.md OUT.json WITHOUT_1.json WITH_1.json ...

The benchmark files alternate, without first. Exit 2 on bad arguments or files.
"""
import json
import math
import statistics
import sys

from gbench_units import case_medians
from report_files import write_whole


def units(case):
    """The suffix of a row's per-process figures: "_us" for times, none for a GPU's ratios."""
    return "" if case.endswith("with every GPU / alone") else "_us"


def compare(without, with_):
    """Rows per case present on both sides of every pair."""
    cases = [c for c in without[0] if all(c in side for side in without + with_)]
    n = len(without)
    chance = 2 / math.comb(2 * n, n)
    rows = []
    for case in cases:
        a = [side[case] for side in without]
        b = [side[case] for side in with_]
        ratio = statistics.median(b) / statistics.median(a)
        if max(b) < min(a):
            reading = f"lower in every process (chance {chance:.3f})"
        elif min(b) > max(a):
            reading = f"higher in every process (chance {chance:.3f})"
        else:
            reading = "within the spread"
        unit = units(case)
        rows.append({"case": case, "without" + unit: a, "with" + unit: b, "ratio": ratio, "reading": reading})
    return rows


def main(argv):
    if len(argv) < 5 or (len(argv) - 3) % 2:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    setting, out_md, out_json, files = argv[0], argv[1], argv[2], argv[3:]
    try:
        sides = [case_medians(p) for p in files]
    except (OSError, ValueError, KeyError) as error:
        print(f"microbench_env_ab: cannot read a benchmark file: {error}", file=sys.stderr)
        return 2
    rows = compare(sides[0::2], sides[1::2])
    lines = [f"# `{setting}`: mtc_engine_bench without and with it, {len(files) // 2} processes each, "
             "in turn", "",
             "Per-process medians in us (without, then with), or for a GPU's row its per-process "
             "ratio with every GPU copying to alone; ratio: the median with over the median without.",
             "", "| case | without | with | ratio | reading |", "|---|---|---|---|---|"]
    for r in rows:
        unit = units(r["case"])
        form = "{:.1f}" if unit else "{:.3f}x"
        cells = [", ".join(form.format(v) for v in r[side + unit]) for side in ("without", "with")]
        lines.append(f"| {r['case']} | {cells[0]} | {cells[1]} | {r['ratio']:.3f} | {r['reading']} |")
    write_whole([(out_md, "\n".join(lines) + "\n"),
                 (out_json, json.dumps({"setting": setting, "processes_per_side": len(files) // 2,
                                        "cases": rows}, indent=1))])
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
