#!/usr/bin/env python3
"""The summary of scripts/gpu-check-neighbours.sh: the engine's micro-benchmarks run alone
("none") and beside busy neighbours of several kinds, the kinds in a new order each round.

Each run is a Google Benchmark JSON file ROUND-KIND.json, beside it ROUND-KIND.stat: /proc/stat's
first line before and after the run. A benchmark's figure for a run is gbench_units.case_medians':
the median over its repetitions of each repetition's median copy (median_us) where the benchmark
gives one, else of its real_time; a repetition's mean would carry one stalled copy. Ratios are taken within a round
(a kind against that round's run alone), so that each compares moments of the host close together.

    python3 scripts/neighbours_summary.py RUNS_DIR THREADS OUT.md OUT.json KIND...

Writes OUT.md (per benchmark and kind: the median of the rounds, and the range of the ratios to
"none" over the rounds; per kind: the share of the CPUs' time the hypervisor took, steal, and the
share the VM kept busy) and OUT.json (every round's figure, by benchmark and kind).
"""

import json
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gbench_units import case_medians  # noqa: E402
from report_files import write_whole  # noqa: E402


def cpu_shares(path):
    """(steal %, busy %) of all CPUs' time between the two /proc/stat lines of a .stat file."""
    lines = path.read_text().splitlines()
    if len(lines) != 2:
        raise ValueError(f"{path}: expected two /proc/stat lines, found {len(lines)}")
    # user nice system idle iowait irq softirq steal (the guest times that follow are in user)
    before, after = ([int(v) for v in line.split()[1:9]] for line in lines)
    delta = [a - b for a, b in zip(after, before)]
    total = sum(delta) or 1
    idle, iowait, steal = delta[3], delta[4], delta[7]
    return 100 * steal / total, 100 * (total - idle - iowait - steal) / total


def summarize(runs, threads, kinds):
    """(markdown text, {"benchmark | kind": {round: us}})."""
    times = {}  # (benchmark, kind) -> {round: us}
    shares = {kind: [] for kind in kinds}
    for path in sorted(runs.glob("*-*.json"), key=lambda p: p.stem):
        round_, kind = path.stem.split("-", 1)
        if kind not in shares:
            continue
        for name, us in case_medians(path).items():
            times.setdefault((name, kind), {})[round_] = us
        stat = path.with_suffix(".stat")
        if stat.exists():
            shares[kind].append(cpu_shares(stat))
    lines = [
        f"# Busy neighbours beside the benchmark on GPU 0: {threads} threads of each busy kind;"
        " copies and starts: the engine's hot copy on every other GPU, a process each",
        "",
        "| benchmark | kind | median of rounds (us) | ratio to none, by round |",
        "|---|---|---|---|",
    ]
    for name in sorted({n for n, _ in times}):
        alone = times.get((name, "none"), {})
        for kind in kinds:
            rounds = times.get((name, kind))
            if not rounds:
                continue
            ratios = [us / alone[r] for r, us in rounds.items() if alone.get(r, 0) > 0]
            span = f"{min(ratios):.2f}-{max(ratios):.2f}x" if ratios and kind != "none" else "-"
            lines.append(f"| {name} | {kind} | {statistics.median(rounds.values()):.1f} | {span} |")
    lines += ["", "| kind | steal, % of the CPUs' time (by round) | busy, % (by round) |", "|---|---|---|"]
    for kind in kinds:
        steal = ", ".join(f"{s:.1f}" for s, _ in shares[kind])
        busy = ", ".join(f"{b:.0f}" for _, b in shares[kind])
        lines.append(f"| {kind} | {steal or '-'} | {busy or '-'} |")
    table = {f"{name} | {kind}": rounds for (name, kind), rounds in sorted(times.items())}
    return "\n".join(lines) + "\n", table


def main(argv):
    if len(argv) < 6:
        print("usage: neighbours_summary.py RUNS_DIR THREADS OUT.md OUT.json KIND...", file=sys.stderr)
        return 2
    if "none" not in argv[5:]:
        print("neighbours_summary.py: no 'none' kind: the ratios need the runs alone", file=sys.stderr)
    runs, threads, out_md, out_json, kinds = pathlib.Path(argv[1]), argv[2], argv[3], argv[4], argv[5:]
    text, table = summarize(runs, threads, kinds)
    write_whole([(out_md, text), (out_json, json.dumps(table, indent=1) + "\n")])
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
