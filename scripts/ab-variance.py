#!/usr/bin/env python3
"""Where the width of an in-process A/B interval comes from.

    python3 scripts/ab-variance.py JOB_FOLDER [JOB_FOLDER ...]

Each JOB_FOLDER holds one perf-ci job's reports (its in-process/ folder, or the folder above it),
measured with --raw-samples (MTC_PERF_BENCH_ARGS=--raw-samples). For every A/B pair
(VARIANT@cand or VARIANT against VARIANT@base) it prints:
  - the spread of the per-round log ratios within a process and of the processes' means, and the
    part of the latter that the rounds' spread does not explain (the process effect);
  - the change and the 95 % half-width that compare's clustered interval gives (the larger of
    the rounds' and the processes' t-intervals) for two estimators of a round's ratio, from the
    same samples: the ratio of the two round medians, and the median of the per-step ratios
    (the two samples of a step were taken back to back).
Reads the reports only; the standard library alone.
"""
import collections
import json
import math
import pathlib
import statistics
import sys

from paired_verdict import t975


def clustered(logs, processes):
    """compare's interval: mean log ratio, half-width max(rounds' t, processes' t)."""
    mean = statistics.mean(logs)
    half = t975(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    by_process = collections.defaultdict(list)
    for value, process in zip(logs, processes):
        by_process[process].append(value)
    means = [statistics.mean(v) for v in by_process.values()]
    if len(means) > 1:
        half = max(half, t975(len(means) - 1) * statistics.stdev(means) / math.sqrt(len(means)))
    return mean, half


def rounds_of(entry):
    raw = entry["raw_samples"]
    rounds = collections.defaultdict(list)
    for r, wall in zip(raw["round"], raw["wall_s"]):
        rounds[r].append(wall)
    return [rounds[r] for r in sorted(rounds)]


def job_pairs(folder):
    """case -> {"medians": [(log, process)], "steps": [(log, process)]}"""
    pairs = collections.defaultdict(lambda: {"medians": [], "steps": []})
    reports = sorted(pathlib.Path(folder).rglob("*.json"))
    for process, path in enumerate(reports):
        doc = json.loads(path.read_text())
        for run in doc.get("runs", []):
            by_key = {(e["pattern"], e["direction"], e["strategy"]): e for e in run["results"]
                      if e.get("status") == "ok"}
            for (pattern, direction, strategy), base in by_key.items():
                if not strategy.endswith("@base"):
                    continue
                variant = strategy[:-len("@base")]
                cand = by_key.get((pattern, direction, variant + "@cand")) or by_key.get((pattern, direction, variant))
                if cand is None or "raw_samples" not in cand or "raw_samples" not in base:
                    continue
                for a, b in zip(rounds_of(cand), rounds_of(base)):
                    steps = [math.log(x / y) for x, y in zip(a, b)]
                    key = (pattern, direction, cand["strategy"])
                    pairs[key]["medians"].append((math.log(statistics.median(a) / statistics.median(b)), process))
                    pairs[key]["steps"].append((statistics.median(steps), process))
    return pairs


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for folder in sys.argv[1:]:
        print(folder)
        for key, estimators in sorted(job_pairs(folder).items()):
            logs = [v for v, _ in estimators["medians"]]
            processes = [p for _, p in estimators["medians"]]
            by_process = collections.defaultdict(list)
            for value, process in zip(logs, processes):
                by_process[process].append(value)
            within = statistics.mean(statistics.variance(v) for v in by_process.values() if len(v) > 1)
            between = statistics.variance([statistics.mean(v) for v in by_process.values()])
            per_process = statistics.mean(len(v) for v in by_process.values())
            effect = math.sqrt(max(between - within / per_process, 0.0))
            line = f"  {' '.join(key)}: sd of a round {math.sqrt(within) * 100:.2f} %, process effect {effect * 100:.2f} %"
            for name in ("medians", "steps"):
                mean, half = clustered([v for v, _ in estimators[name]], [p for _, p in estimators[name]])
                line += f"; {name} {(math.exp(mean) - 1) * 100:+.2f} % +-{half * 100:.2f} %"
            print(line)


if __name__ == "__main__":
    main()
