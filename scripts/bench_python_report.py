"""The report of scripts/bench_python.py: its Markdown table and the lines below it (how many
times faster mtc is than the methods it is compared with, its verdict against a baseline build
and against itself, the timed calls' phases, the closing synchronize's yardstick, the parts of
the untimed calls), from the report's dict (its JSON)."""

import statistics

from paired_verdict import unsure_reading, verdict_of_logs


def fmt_time(seconds):
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def markdown(report):
    env = report["environment"]
    lines = [
        f"{env['gpu']}, torch {env['torch']}, Python {env['python']}, {env['cpus']} CPUs, {env['date']}",
        "",
        f"{report['config']}: {report['tensors']} tensors, {report['bytes']:,} bytes, target {report['device']}",
        "",
        runs_line(report["settings"]),
        "",
        "| pattern | method | mean ± std (per call, over runs) | median | p90 | start_copy returns (median) "
        "| speedup vs `.to()` (median) | verified |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        t = row["time"]
        base = next(r for r in report["rows"] if r["pattern"] == row["pattern"] and r["method"] == "to")
        start = fmt_time(row["start_median_s"]) if row["start_median_s"] is not None else "-"
        lines.append(
            f"| {row['pattern']} | {row['method']} | {fmt_time(t['mean_s'])} ± {fmt_time(t['std_s'])} "
            f"| {fmt_time(t['median_s'])} | {fmt_time(t['p90_s'])} | {start} "
            f"| {base['time']['median_s'] / t['median_s']:.1f}x | {'yes' if row['verified'] else 'NO'} |"
        )
    lines += [f"\n{line}" for line in comparisons(report)]
    lines += [f"\n{line}" for line in verdict_lines(report)]
    lines += [f"\n{line}" for line in phases_lines(report)]
    lines += [f"\n{line}" for line in yardstick_lines(report)]
    lines += [f"\n{line}" for line in parts_lines(report)]
    return "\n".join(lines) + "\n"


def runs_line(settings):
    """How the calls were timed: runs, calls per run and the methods' order (reports written before
    the order was rotated have no "order": theirs was fixed)."""
    order = settings.get("order", "fixed")
    how = ("each run starting one method further on" if order == "rotated"
           else "the methods in the same order in every run")
    return (f"{settings['runs']} runs of {settings['iters']} timed calls per method and pattern, "
            f"interleaved, {how}")


# Methods mtc is compared with in the report, and how the comparison is worded.
COMPARED = {"original": "than the original package", "mtc_nodefer": "than without its deferred release",
            "mtc_noreuse": "than without its reuse of tensor objects",
            "mtc_nostream": "than with the structure walked whole before the engine starts",
            "mtc_wide": "than with the engine's walk split among up to three times as many threads",
            "mtc_narrow": "than with the engine's walk split among half as many threads",
            "mtc_again": "than itself run again (an A/A pair)",
            "baseline": "than the baseline build (--baseline)"}

# The methods mtc is judged against in alternating turns (bench_python_ab.paired_runs, paired_verdict.py):
# the baseline build, and mtc itself (the A/A pair, which should come out SAME).
JUDGED = {"baseline": "the baseline build", "mtc_again": "itself run again (A/A)"}


def comparisons(report):
    """Per pattern, how many times faster (or slower) mtc is than each method of COMPARED that ran:
    the ratio of the medians of all calls, and the ratios of the two methods' run means, run by run
    (run i of each was measured back to back, so a ratio of one run sees one state of the machine):
    their range, their median and in how many runs mtc was the faster. Two decimals below 2x,
    where a difference of a few percent matters. An A/A pair (mtc_again) says how far apart the
    same code comes in the same call: on 1 x NVIDIA H200 hosts, up to 8 % in a step (2026-12-04)."""
    out = []
    for other, wording in COMPARED.items():
        for pattern in dict.fromkeys(r["pattern"] for r in report["rows"]):
            rows = {r["method"]: r["time"] for r in report["rows"] if r["pattern"] == pattern}
            if other not in rows or "mtc" not in rows:
                continue
            theirs, mtc = rows[other], rows["mtc"]
            ratio = theirs["median_s"] / mtc["median_s"]
            per_run = [o / m for o, m in zip(theirs["run_means_s"], mtc["run_means_s"])]
            digits = 1 if max(ratio, 1 / ratio) >= 2 else 2
            how = f"{ratio:.{digits}f}x faster" if ratio >= 1 else f"{1 / ratio:.{digits}f}x slower"
            out.append(f"{pattern}: mtc {how} {wording} (medians "
                       f"{fmt_time(mtc['median_s'])} and {fmt_time(theirs['median_s'])}); run by run "
                       f"{min(per_run):.{digits}f}-{max(per_run):.{digits}f}x over {len(per_run)} runs "
                       f"(median {statistics.median(per_run):.{digits}f}x, mtc faster in "
                       f"{sum(r > 1 for r in per_run)})"
                       # Blocks favoured the method that followed its twin (docs/python.md): the
                       # judged pairs' verdicts come from the A/B's turns, in lines of their own.
                       + ("; in blocks, not the A/B: its verdict is below" if other in JUDGED else ""))
    return out


# bench_python.py --fail-on: the verdicts of the A/B against the baseline build that make it exit 1.
FAIL_ON = {"slower": ("SLOWER",), "faster": ("FASTER",), "any": ("SLOWER", "FASTER"), "none": ()}


def failing_verdicts(verdicts_of_report, fail_on):
    """The verdicts against the baseline build (not mtc_again's: the A/A pair checks the
    measurement, not the change) that --fail-on `fail_on` fails on."""
    return [v for v in verdicts_of_report if v["against"] == "baseline" and v["verdict"] in FAIL_ON[fail_on]]


def verdicts(report):
    """Per pattern, mtc judged against each method of JUDGED from the A/B in alternating turns
    (report["paired"]): {pattern, against, untimed_calls, timed_calls, confined_runs, ratio, low, high,
    runs, verdict, reading}, the ratio as the other's time over mtc's (above 1 mtc is faster)."""
    # A turn's calls: one, timed, in reports from before the turns.
    out = [{"pattern": p["pattern"], "against": p["against"], "untimed_calls": p.get("untimed_calls", 0),
            "timed_calls": p.get("timed_calls", 1), "confined_runs": len(p.get("run_cpus", [])),
            **verdict_of_logs(p["run_log_ratios"])}
           for p in report.get("paired", [])]
    for v in out:
        v["reading"] = unsure_reading(v)  # what an UNSURE one still says; "" for the others
    return out


def verdict_lines(report):
    """verdicts() as sentences: the change, its 95 % interval and the verdict."""
    out = []
    confined = report.get("settings", {}).get("ab_cpus", 0)  # reports before it: not confined
    for v in verdicts(report):
        interval = (f"95 % interval {v['low']:.3f}-{v['high']:.3f}" if v["low"] is not None
                    else "too few runs for an interval")
        untimed, timed = v["untimed_calls"], v["timed_calls"]
        by_call = timed == 1 and untimed == 0
        turn = "call by call" if by_call else f"in turns of {timed} timed calls after {untimed} untimed"
        cpus = f"{confined} CPU{'s' if confined > 1 else ''}"
        if confined and v["confined_runs"] == v["runs"]:
            turn += f", each run on {cpus} drawn for it"
        elif confined and v["confined_runs"]:
            turn += f", {v['confined_runs']} of its {v['runs']} runs on {cpus} drawn for each (then unconfined)"
        elif confined:
            turn += ", unconfined (the confinement failed)"
        out.append(f"{v['pattern']}: mtc against {JUDGED[v['against']]}, {turn}: {v['ratio']:.3f}x "
                   f"(its time over mtc's: the geometric mean over {v['runs']} runs of each run's median ratio "
                   f"over pairs of {'calls' if by_call else 'turns'}; {interval}; 2 % threshold): {v['verdict']}"
                   + (f" ({v['reading']})" if v["reading"] else ""))
    return out


def phases_lines(report):
    """Where the timed calls of each start_copy method went (Phases), per pattern: medians, which
    need not add up to the call's median."""
    out = []
    for row in report["rows"]:
        if row.get("phases_median_s"):
            phases = ", ".join(f"{name} {fmt_time(value)}" for name, value in row["phases_median_s"].items())
            out.append(f"{row['pattern']} {row['method']}, the timed calls' phases (medians): {phases}")
    return out


def yardstick_lines(report):
    """The closing synchronize's yardstick (synchronize_yardstick), per pattern."""
    return [f"{pattern}: a synchronize with no copy before it (the phases' yardstick, medians of {report['settings'].get('parts_calls', 200)}): "
            f"{y['alone_us']:.1f} us, and right after it {y['again_us']:.1f} us"
            for pattern, y in report.get("synchronize_yardstick_us", {}).items()]


def parts_lines(report):
    """Where an mtc call's time went, per pattern and method: the medians of its parts (the
    collector's a mean)."""
    out = []
    for row in report["rows"]:
        if "parts_us" in row:
            parts = ", ".join(f"{key.removesuffix('_us')} {value:.1f}" for key, value in row["parts_us"].items())
            out.append(f"{row['pattern']} {row['method']}, medians of {report['settings'].get('parts_calls', 200)} more calls (untimed; us, "
                       f"split_leaf_ns in ns, released_tensors, recycled, walk_threads and feed_sleeps counts, collector_mean a mean): {parts}")
    return out
