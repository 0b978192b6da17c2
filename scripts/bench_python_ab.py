"""bench_python.py's A/B of mtc against a judged method (bench_python_report.JUDGED: the
baseline build, mtc itself again), in alternating turns in one process."""

import math
import statistics

import process_cpus
from bench_python_calls import batch_of, timed_call

TURNS = {"protocol": (2, 4), "step": (0, 1)}


def paired_runs(candidate, other, batches, device, pattern, runs, iters, cpus=0):
    """An A/B in turns (TURNS): in each of `runs` runs, about `iters` timed calls of each side
    in steps of one turn of `candidate` and one of `other`, which of the two goes first
    alternating from step to step and run to run, so that each side follows itself as often as the
    other (run by run in blocks, the side that came second after its twin was up to 16 % faster:
    1 x NVIDIA H100, 2026-12-06). Each side's previous output dies inside its next call. A turn's
    time is the mean of its timed calls; a run's ratio is the median, over pairs of consecutive
    steps (one with each order: what going first or second does cancels within a pair), of the
    pair's mean log ratio (other's time over candidate's). With `cpus`, each run confines the
    process to that many CPUs drawn for it (process_cpus): unconfined, an A/A pair's ratio drifted
    by up to 10 % within a process and 3 of 5 processes called one side SLOWER (1 x NVIDIA H100,
    2026-12-06). Returns the turns' calls, the CPUs of each run, each run's log ratio and both
    sides' run means (s)."""
    untimed, timed = TURNS[pattern]
    steps = max(2, iters // timed)
    out = {"untimed_calls": untimed, "timed_calls": timed, "run_cpus": [], "run_log_ratios": [],
           "candidate_run_means_s": [], "other_run_means_s": []}
    allowed = process_cpus.allowed_cpus()
    try:
        for r in range(runs):
            if cpus:
                out["run_cpus"].append(process_cpus.draw(allowed, cpus, pattern, r))
                process_cpus.confine(out["run_cpus"][-1])
            paired_run(candidate, other, batches, device, pattern, r, steps, out)
    finally:
        if cpus:
            process_cpus.confine(allowed)
    return out


def paired_run(candidate, other, batches, device, pattern, r, steps, out):
    """Run `r` of paired_runs, its ratio and run means appended to `out`."""
    untimed, timed = TURNS[pattern]
    held = [[None], [None]]  # each side's last output
    times = [[], []]
    for i in range(steps):
        batch = batch_of(batches, pattern, i)
        for side in ((0, 1) if (i + r) % 2 == 0 else (1, 0)):
            turn = [timed_call((candidate, other)[side], batch, held[side], device, pattern, None)[0]
                    for _ in range(untimed + timed)]
            times[side].append(statistics.fmean(turn[untimed:]))
    del held
    logs = [math.log(o / c) for c, o in zip(*times)]
    pairs = [(logs[k] + logs[k + 1]) / 2 for k in range(0, len(logs) - 1, 2)] or logs
    out["run_log_ratios"].append(statistics.median(pairs))
    out["candidate_run_means_s"].append(statistics.fmean(times[0]) * 1e-9)
    out["other_run_means_s"].append(statistics.fmean(times[1]) * 1e-9)
