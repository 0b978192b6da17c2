"""The verdict on a change measured as paired runs of one process: run i of the baseline and run i
of the candidate were taken back to back, so their ratio sees one state of the host.

The change is the geometric mean of the per-run ratios (baseline time / candidate time: above 1,
the candidate is faster). Its interval is the 95 % Student-t interval of the mean log ratio over
the runs: where runs are independent samples of one host's states, 95 % of such intervals hold
the ratio that many more runs would give. Runs of one process share its code layout and thread
placement, which can favour one of two identical builds by about 2 % for a whole process
(docs/ci.md): the interval does not hold that, and the default threshold is 2 % for it.

Verdicts, as the engine's A/B gives them (docs/ci.md): SAME when the whole interval lies within
[1/(1+t), 1+t]; FASTER or SLOWER when it lies wholly beyond one edge; UNSURE when it straddles an
edge or fewer than 3 runs back it.
"""

import math
import statistics

# Student t quantiles at 0.975 by degrees of freedom: 1-30 to two decimals; beyond, the value of
# the next tabulated df below, which is the larger (an interval too wide rather than too narrow).
_T975 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.15, 2.13,
         2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05, 2.04]
_T975_BEYOND = [(40, 2.02), (60, 2.00), (120, 1.98)]

MIN_RUNS = 3


def t975(df):
    """The 0.975 quantile of Student's t with `df` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError(f"t975: {df} degrees of freedom")
    if df <= len(_T975):
        return _T975[df - 1]
    for limit, value in reversed(_T975_BEYOND):
        if df >= limit:
            return value
    return _T975[-1]


def paired_verdict(baseline_times, candidate_times, threshold=0.02):
    """{ratio, low, high, runs, verdict} for paired run times (same length, all > 0): ratio and
    interval as baseline / candidate (above 1 the candidate is faster); low and high are None
    when fewer than MIN_RUNS runs back them, and the verdict is then UNSURE."""
    if len(baseline_times) != len(candidate_times) or not baseline_times:
        raise ValueError("paired_verdict: the two sides need as many runs, at least one")
    return verdict_of_logs([math.log(b / c) for b, c in zip(baseline_times, candidate_times)], threshold)


def verdict_of_logs(logs, threshold=0.02):
    """paired_verdict() from each run's log ratio (baseline over candidate) as measured, e.g. the
    median of a run's per-step log ratios."""
    if not logs:
        raise ValueError("verdict_of_logs: no runs")
    mean = statistics.fmean(logs)
    out = {"ratio": math.exp(mean), "low": None, "high": None, "runs": len(logs), "verdict": "UNSURE"}
    if len(logs) < MIN_RUNS:
        return out
    half = t975(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    out["low"], out["high"] = math.exp(mean - half), math.exp(mean + half)
    edge = math.log1p(threshold)
    if -edge <= mean - half and mean + half <= edge:
        out["verdict"] = "SAME"
    elif mean - half > edge:
        out["verdict"] = "FASTER"
    elif mean + half < -edge:
        out["verdict"] = "SLOWER"
    return out


def unsure_reading(v):
    """What an UNSURE verdict from paired_verdict() still says, in words, or "" for another
    verdict: on which side of 1 the interval lies. It names no count of runs that would settle
    it: worked out from the runs at hand, whose mean and spread are uncertain themselves, such a
    count fell short on synthetic runs (a true 5 % gain in 6 % noise, 6 runs UNSURE but faster:
    the 9 runs it named, drawn afresh, called FASTER in 33 of 200 trials; results/NOTES.md,
    2026-12-06)."""
    if v["verdict"] != "UNSURE":
        return ""
    if v["low"] is None:
        return f"fewer than {MIN_RUNS} runs: no interval"
    if v["low"] > 1:
        return "faster, but whether by more than the threshold needs more runs"
    if v["high"] < 1:
        return "slower, but whether by more than the threshold needs more runs"
    return "the interval holds 1 and an edge: more runs, or a quieter host"
