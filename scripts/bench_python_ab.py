"""bench_python.py's A/B of mtc against a judged method (bench_python_report.JUDGED: the
baseline build, mtc itself again), in alternating turns in one process."""

import math
import statistics
import sys

import process_cpus
from bench_python_calls import batch_of, timed_call

# The A/B's turns by pattern: (calls of a side right after the other side's, untimed; calls
# timed). Back to back, each side's engine must copy back to back, as the pattern says: call by
# call, each engine lay idle through the other's call (~200 us, about its workers' spin before they
# sleep), and a build 12 us slower came out 31 us slower over 40 runs, 11-14 us over 10 and 20
# (1 x NVIDIA H100, 2026-12-06, unconfined: see paired_runs' `cpus`). The untimed calls let the
# side's workers and caches take up the copy again. In a step each call has its own idle gap
# before it: one call a turn.
TURNS = {"protocol": (2, 4), "step": (0, 1)}


def paired_runs(candidate, other, batches, device, pattern, runs, iters, cpus=0, seed=0):
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
    2026-12-06). The draws come from `seed` (process_cpus.new_seed: a process's own). Should a
    confinement fail midway, the runs from there go unconfined and `confine_error` says why.
    Returns the turns' calls, the CPUs of each confined run, each run's log ratio and both sides'
    run means (s)."""
    untimed, timed = TURNS[pattern]
    steps = max(2, iters // timed)
    out = {"untimed_calls": untimed, "timed_calls": timed, "run_cpus": [], "run_log_ratios": [],
           "candidate_run_means_s": [], "other_run_means_s": []}
    allowed = process_cpus.allowed_cpus()
    try:
        for r in range(runs):
            if cpus and "confine_error" not in out:
                drawn = process_cpus.draw(allowed, cpus, f"{seed}:{pattern}", r)
                try:
                    process_cpus.confine(drawn)
                    out["run_cpus"].append(drawn)
                except OSError as error:
                    out["confine_error"] = f"run {r + 1}: {error}"
                    print(f"bench_python.py: {pattern}: the A/B's run {r + 1} could not be confined ({error}); "
                          "it and the runs after it go unconfined", file=sys.stderr)
                    confine_quietly(allowed)
            paired_run(candidate, other, batches, device, pattern, r, steps, out)
    finally:
        if cpus:
            confine_quietly(allowed)
    return out


def confine_quietly(cpus):
    """process_cpus.confine, a failure left unsaid: where it is called, the error that matters (a
    failed copy, a failed confinement) has been reported or is on its way out."""
    try:
        process_cpus.confine(cpus)
    except OSError:
        pass


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
