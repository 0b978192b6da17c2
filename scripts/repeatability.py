#!/usr/bin/env python3
"""How well repeated mtc-bench runs agree: the test of whether the reported intervals are honest.

    python3 scripts/repeatability.py run-1.json run-2.json ... [--md OUT.md]

For each case (config, pattern, direction, strategy, device) over the reports given:
  spread       (largest - smallest per-run median) / median of the per-run medians;
  containment  of the ordered pairs of runs (i, j), i != j, the fraction where run i's interval
               contains run j's median. Honest 95 % intervals contain another run's median most
               of the time (the goal is at least 90 %); intervals that only describe sampling
               within one run contain it far less often when runs differ.
Also the busy-host flags of each run. Exit status 0, or 2 when a report cannot be read.
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_files import write_whole  # noqa: E402


def cases(report):
    for run in report["runs"]:
        name = run["config"]["name"]
        for e in run["results"]:
            if e.get("status") != "ok":
                continue
            key = (name, e.get("pattern", "hot"), e["direction"], e["strategy"], e["device"])
            interval = e.get("interval_s") or {}
            yield key, e["wall_s"]["median"], interval.get("low"), interval.get("high")


def fmt_us(seconds):
    return f"{seconds * 1e6:,.1f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+")
    parser.add_argument("--md", help="also write the table here")
    args = parser.parse_args()
    runs = []
    for path in args.reports:
        try:
            with open(path, encoding="utf-8") as f:
                runs.append(json.load(f))
        except (OSError, ValueError) as e:
            print(f"repeatability: cannot read {path}: {e}", file=sys.stderr)
            return 2
    table = {}
    for index, report in enumerate(runs):
        for key, median, low, high in cases(report):
            table.setdefault(key, {})[index] = (median, low, high)

    lines = [f"{len(runs)} runs", "",
             "| config | pattern | direction | strategy | GPU | medians (us) | spread | containment |",
             "| --- | --- | --- | --- | ---: | --- | ---: | ---: |"]
    total_pairs = total_contained = 0
    for key in sorted(table):
        per_run = table[key]
        medians = [per_run[i][0] for i in sorted(per_run)]
        center = statistics.median(medians)
        spread = (max(medians) - min(medians)) / center if center > 0 else float("nan")
        pairs = contained = 0
        for i, (_, low, high) in per_run.items():
            for j, (other, _, _) in per_run.items():
                if i == j or low is None:
                    continue
                pairs += 1
                contained += low <= other <= (high if high is not None else float("inf"))
        total_pairs += pairs
        total_contained += contained
        share = f"{100 * contained / pairs:.0f} %" if pairs else "-"
        lines.append(f"| {' | '.join(str(k) for k in key)} | {', '.join(fmt_us(m) for m in medians)} | "
                     f"{100 * spread:.1f} % | {share} |")
    if total_pairs:
        lines += ["", f"all cases: {total_contained} of {total_pairs} pairs contained "
                      f"({100 * total_contained / total_pairs:.1f} %)"]
    for index, report in enumerate(runs):
        host = report.get("context", {}).get("host_state", {})
        gpu = (report.get("context", {}).get("gpus") or [{}])[0].get("name", "no GPU")
        flags = "; ".join(host.get("warnings", [])) or "no busy-host flag"
        lines.append(f"- run {index + 1} ({args.reports[index]}): {gpu}, {report['context'].get('date', '?')}: {flags}")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.md:
        write_whole([(args.md, text)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
