#!/usr/bin/env python3
"""Times copying a nested batch from Python: per-tensor .to(), .to(non_blocking=True), and
mtc.start_copy(...).get(), on the batch a workload config describes (configs/streampetr.json:
the 528-tensor reference batch).

Two patterns, each timed per call with a device synchronize at the end for every method:
- protocol: the original package's evaluation: warm-up, then RUNS runs of ITERS calls on one
  batch, each call's output replacing the previous one's inside the timed region (so the
  previous output is freed inside it, after the new copy); each run's mean per call, reported
  as mean +- std over the runs (and the median of all calls). Until 2026-11-27 the previous
  output was dropped before the clock started, which left its free out of every method's time;
- step: a training step: each call copies the next batch of a rotation of K=8 (distinct
  tensors), after an idle gap of 2 ms, and drops the previous call's output inside the timed
  region, as a training loop replacing its batch does.
For every mtc method, the baseline build and the original package, the timed calls' phases are
timed too: start_copy()'s return, get(), the handle's drop, the synchronize and the rest (Phases).
The methods' runs are interleaved (run 1 of every method, then run 2, ..., each run in an order
rotated by one: run_order), so a change of the machine's state over the measurement falls on all
of them alike. mtc_nodefer is mtc without its deferred release of dropped results, mtc_noreuse mtc
without its reuse of dropped results' tensor objects as new outputs (mtc.set_output_reuse),
mtc_nostream mtc with the whole structure walked before the engine starts (not element by element
into the running copy), mtc_wide and mtc_narrow mtc with the engine's walk split at one thread per
40 leaves instead of 128 and per 256, mtc_again mtc a second time (an A/A pair). For each mtc
method, 200 more calls per pattern, untimed, say where its time goes (the medians of
handle.stats()'s parts and of the drops that follow a call).

--original adds the original package, accvlab.multi_tensor_copier, called the same way
(start_copy(data, device).get()), in the same process, interleaved with the others: build it
from its source into this Python environment first (docs/python.md, "Timing the original
package").

--baseline PACKAGE adds a build of mtc from another tree, installed under the name PACKAGE
(scripts/install_module_as.py), timed as mtc is, in the same process, interleaved: an A/B of the
module. Its verdict, and mtc_again's (an A/A pair), come from a pass that times each against mtc
in alternating turns (paired_runs; paired_verdict.py).

    python scripts/bench_python.py [--config configs/streampetr.json] [--original] [--baseline PACKAGE]
        [--fail-on slower|faster|any|none] [--md OUT.md] [--json OUT.json]

It says on stderr when each run of every method is done. Report paths are checked before anything
is measured (a folder, a missing folder, the config itself, --md and --json the same file: exit 2)
and written whole or not at all.

Exit codes: 0 ok; 1 a verdict of the A/B against --baseline matched --fail-on (by default: mtc
SLOWER than the baseline build); 2 bad arguments or config, or a report that cannot be written
(wins over 1 and 4); 3 --original or --baseline, but its package cannot be imported (or is no
other build of mtc); 4 a method's output differs from its input (wins over 1); 5 an unexpected
error (its traceback on stderr; a copy that raised, say). The reports are written before exit 1 or
4.
"""

import gc
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from copy_check import difference  # noqa: E402
from report_files import write_whole  # noqa: E402
from bench_python_cli import check_outputs, parse_args, parse_overrides  # noqa: E402
from bench_python_report import (  # noqa: E402,F401 (comparisons: tests)
    JUDGED, comparisons, failing_verdicts, fmt_time, markdown, verdicts)
from spec_batch import SpecBatch, SpecError  # noqa: E402
from bench_python_calls import IDLE_GAP_S, ROTATION, batch_of, synchronize, timed_call  # noqa: E402
from bench_python_ab import TURNS, paired_runs  # noqa: E402,F401 (TURNS: tests)
import process_cpus  # noqa: E402
from bench_python_methods import (  # noqa: E402,F401 (Phases: tests)
    MTC_SETTINGS, ORIGINAL_MODULE, BaselineMissing, OriginalMissing, Phases, apply_settings, import_baseline,
    import_original, methods)

def summarize(samples_ns, run_means_ns):
    s = sorted(samples_ns)
    return {
        "count": len(s),
        "mean_s": statistics.fmean(run_means_ns) * 1e-9,
        "std_s": (statistics.stdev(run_means_ns) if len(run_means_ns) > 1 else 0.0) * 1e-9,
        "median_s": statistics.median(s) * 1e-9,
        "p90_s": s[min(len(s) - 1, int(0.9 * len(s)))] * 1e-9,
        "min_s": s[0] * 1e-9,
        # Each run's mean, in the order run: a run far off the others is visible here.
        "run_means_s": [m * 1e-9 for m in run_means_ns],
    }


def one_run(copy, batches, device, pattern, iters, phases):
    """One run of `iters` timed calls; returns their times in ns."""
    run = []
    held = [None]
    for i in range(iters):
        total, synchronized = timed_call(copy, batch_of(batches, pattern, i), held, device, pattern, phases)
        run.append(total)
        phases.close_call(total, synchronized)
    del held
    return run


def run_order(names, run):
    """The order of the methods' runs in run `run`: each run starts one method further on, so that
    each method runs in each place as often (over a multiple of len(names) runs). In a fixed order
    `to`, mtc, mtc again, the second copy of the same code was faster in 18 of 20 runs back to
    back (by 7 %) and 16 of 20 in a step (4 %) (1 x NVIDIA H200, 2026-12-03)."""
    shift = run % len(names)
    return names[shift:] + names[:shift]


def measure(copies, batches, device, pattern, warmup, runs, iters, rotate=True, progress=None):
    """Times each of `copies` per call, their runs interleaved, in run_order unless not `rotate`;
    returns {name: (summary, Phases)}. `progress(run)` is called after each run (from 1)."""
    for copy in copies.values():
        for i in range(warmup):
            copy(batches[i % len(batches)], None)
            synchronize(device)
    samples = {name: [] for name in copies}
    run_means = {name: [] for name in copies}
    phases = {name: Phases() for name in copies}
    for r in range(runs):
        for name in run_order(list(copies), r if rotate else 0):
            run = one_run(copies[name], batches, device, pattern, iters, phases[name])
            samples[name] += run
            run_means[name].append(statistics.fmean(run))
        if progress:
            progress(r + 1)
    return {name: (summarize(samples[name], run_means[name]), phases[name]) for name in copies}


# The engine's own step timings in handle.stats(), beside the module's parts (stats()["module"]).
ENGINE_PARTS = ("queued_us", "traverse_us", "feed_tail_us", "split_wait_us", "split_queue_us",
                "split_join_us", "split_leaf_ns", "split_stage_us", "submit_us", "allocate_us",
                "driver_us", "outputs_us", "recycled", "walk_threads", "feed_sleeps")
PARTS_CALLS = 200


def mtc_parts(settings, batches, device, pattern, calls=PARTS_CALLS):
    """Where an mtc call's time goes: the median of each of the module's and the engine's timings
    over `calls` copies in `pattern`, with the deferred release and the reuse of tensor objects set
    as `settings` (MTC_SETTINGS) say, and of the two drops
    that follow a call in a loop: the previous result's (when the new one replaces it, in the
    protocol) and the handle's; and the mean time per call of Python's garbage collector, which
    runs inside some calls and not others. Not timed: reading the stats after each call would add
    to a timed call."""
    import mtc

    apply_settings(mtc, settings)
    parts = {}
    out = None
    with CollectorClock() as collector:
        for i in range(calls):
            if pattern == "step":
                time.sleep(IDLE_GAP_S)
                out = None
            handle = mtc.start_copy(batch_of(batches, pattern, i), device)
            new = handle.get()
            t0 = time.perf_counter_ns()
            out = new
            del new
            t1 = time.perf_counter_ns()
            synchronize(device)
            stats = handle.stats()
            t2 = time.perf_counter_ns()
            del handle
            t3 = time.perf_counter_ns()
            for key, value in [*stats["module"].items(), *((k, stats[k]) for k in ENGINE_PARTS),
                               ("drop_previous_result_us", (t1 - t0) * 1e-3), ("drop_handle_us", (t3 - t2) * 1e-3)]:
                parts.setdefault(key, []).append(value)
        del out
    result = {key: statistics.median(values) for key, values in parts.items()}
    result["collector_mean_us"] = collector.ns * 1e-3 / calls
    return result


def synchronize_yardstick(device, pattern, calls=PARTS_CALLS):
    """What the closing synchronize of a timed call costs with no copy before it, in the loop of
    `pattern` (after the idle gap in a step): the median of `calls` synchronizes alone, and of as
    many right after them (nothing pending, the path warm). A call's own synchronize far above the
    first is waiting for work the copy left; near it, the synchronize's own path, which every
    method pays alike."""
    alone, again = [], []
    for _ in range(calls):
        if pattern == "step":
            time.sleep(IDLE_GAP_S)
        t0 = time.perf_counter_ns()
        synchronize(device)
        t1 = time.perf_counter_ns()
        synchronize(device)
        t2 = time.perf_counter_ns()
        alone.append(t1 - t0)
        again.append(t2 - t1)
    return {"alone_us": statistics.median(alone) * 1e-3, "again_us": statistics.median(again) * 1e-3}


class CollectorClock:
    """The time Python's garbage collector spends collecting while the block runs (gc.callbacks)."""

    def __init__(self):
        self.ns = 0
        self._start = 0

    def _on_collection(self, phase, info):
        if phase == "start":
            self._start = time.perf_counter_ns()
        else:
            self.ns += time.perf_counter_ns() - self._start

    def __enter__(self):
        gc.callbacks.append(self._on_collection)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self._on_collection)


def environment(device):
    gpu = torch.cuda.get_device_name(torch.device(device)) if torch.device(device).type == "cuda" else "no GPU"
    return {
        "gpu": gpu,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "host": platform.node(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main(argv=None):
    args = parse_args(argv, __doc__.split("\n\n")[0])
    try:
        check_outputs(args)
        overrides = parse_overrides(args.set)
        batches = [SpecBatch(args.config, overrides).build() for _ in range(ROTATION)]
    except (SpecError, OSError, ValueError) as error:
        print(f"bench_python.py: {error}", file=sys.stderr)
        return 2
    leaves = []
    stack = [batches[0]]
    while stack:
        x = stack.pop()
        if type(x) in (list, tuple):
            stack += list(x)
        elif type(x) is dict:
            stack += list(x.values())
        elif isinstance(x, torch.Tensor):
            leaves.append(x)
    try:
        original = import_original() if args.original else None
        baseline = import_baseline(args.baseline) if args.baseline else None
    except (OriginalMissing, BaselineMissing) as error:
        print(f"bench_python.py: {error}", file=sys.stderr)
        return 3
    available = methods(args.device, original, baseline)
    chosen = (args.methods.split(",") + (["original"] if original is not None else [])
              + (["baseline"] if baseline is not None else []))
    if "to" not in chosen or any(m not in available for m in chosen):
        print(f"bench_python.py: --methods: a list of {', '.join(available)} that includes 'to'", file=sys.stderr)
        return 2
    twice = sorted({m for m in chosen if chosen.count(m) > 1})
    if twice:
        # Two rows of one name: a reader of the report could not tell them apart.
        print(f"bench_python.py: --methods: {', '.join(twice)} named twice (--original and --baseline "
              "add their own)", file=sys.stderr)
        return 2
    if baseline is not None and args.fail_on != "none" and args.runs < 3:
        print(f"bench_python.py: --runs {args.runs}: fewer than 3 runs give no verdict, so --fail-on "
              f"{args.fail_on} cannot fail this run", file=sys.stderr)
    ab_cpus = process_cpus.usable_count(args.ab_cpus, process_cpus.allowed_cpus())
    refused = process_cpus.refusal() if ab_cpus else None
    ab_seed = process_cpus.new_seed()
    if refused:
        print(f"bench_python.py: --ab-cpus {ab_cpus}: {refused}; the A/B runs unconfined", file=sys.stderr)
        ab_cpus = 0
    report = {
        # 1: the first with a schema (results/bench_python.schema.json); changes only when a field
        # is renamed, retyped or removed.
        "schema_version": 1,
        "environment": environment(args.device),
        "config": os.path.relpath(args.config),
        "device": args.device,
        "tensors": len(leaves),
        "bytes": sum(t.nbytes for t in leaves),
        "settings": {"warmup": args.warmup, "runs": args.runs, "iters": args.iters,
                     "rotation": ROTATION, "idle_gap_s": IDLE_GAP_S, "interleaved": True,
                     "order": "fixed" if args.fixed_order else "rotated",
                     "parts_calls": PARTS_CALLS, "ab_cpus_asked": args.ab_cpus, "ab_cpus": ab_cpus,
                     "ab_cpus_refused": refused, "ab_cpus_seed": ab_seed, "fail_on": args.fail_on,
                     "baseline": {"package": args.baseline, "file": baseline.__file__} if baseline else None,
                     # Reports written before this key existed dropped it before the clock.
                     "protocol_frees_previous_output_inside": True},
        "rows": [],
        # The A/B in alternating turns of mtc against each JUDGED method that ran (paired_runs).
        "paired": [],
        "synchronize_yardstick_us": {},
    }
    for pattern in ("protocol", "step"):
        verified = {}
        for name in chosen:
            # Three calls, each checked: mtc's third reuses the tensor objects of the first.
            out = None
            for call in range(3):
                out = available[name](batches[call % len(batches)], None)
                synchronize(args.device)
                why = difference(out, batches[call % len(batches)], args.device)
                verified[name] = why is None
                if why:
                    print(f"bench_python.py: {pattern} {name}: call {call + 1}: the copy differs from its input: "
                          f"{why}", file=sys.stderr)
                    break
            del out
        started = time.monotonic()

        def progress(run):
            print(f"bench_python.py: {pattern}: run {run}/{args.runs} of every method done "
                  f"({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)

        results = measure({name: available[name] for name in chosen}, batches, args.device, pattern,
                          args.warmup, args.runs, args.iters, rotate=not args.fixed_order, progress=progress)
        # Before mtc_parts, whose calls are mtc's alone: both sides come to the A/B from the same runs.
        for against in (name for name in JUDGED if name in chosen and "mtc" in chosen):
            report["paired"].append({"pattern": pattern, "against": against, **paired_runs(
                available["mtc"], available[against], batches, args.device, pattern, args.runs, args.iters,
                ab_cpus, ab_seed)})
        for name in chosen:
            summary, phases = results[name]
            medians = phases.medians_s()
            report["rows"].append({
                "pattern": pattern, "method": name, "time": summary, "verified": verified[name],
                "start_median_s": medians["start_copy"] if medians else None,
                "phases_median_s": medians,
            })
            if name in MTC_SETTINGS:
                report["rows"][-1]["parts_us"] = mtc_parts(MTC_SETTINGS[name], batches, args.device, pattern)
            print(f"{pattern:8} {name:8} median {fmt_time(summary['median_s'])}", file=sys.stderr)
        report["synchronize_yardstick_us"][pattern] = synchronize_yardstick(args.device, pattern)
    report["verdicts"] = verdicts(report)
    failed = failing_verdicts(report["verdicts"], args.fail_on)
    # 4 wins: a copy that differs from its input makes its times meaningless.
    report["exit_code"] = 4 if not all(r["verified"] for r in report["rows"]) else 1 if failed else 0
    table = markdown(report)
    print(table)
    try:
        write_whole([(path, text) for path, text in ((args.md, table), (args.json, json.dumps(report, indent=2) + "\n"))
                     if path])
    except OSError as error:
        print(f"bench_python.py: cannot write the report: {error}", file=sys.stderr)
        return 2
    for v in failed:
        print(f"bench_python.py: --fail-on {args.fail_on}: {v['pattern']}: mtc {v['verdict']} than the baseline "
              f"build ({v['ratio']:.3f}x, its time over mtc's)", file=sys.stderr)
    return report["exit_code"]


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # noqa: BLE001 (an error nobody foresaw: never exit 1, the --fail-on verdict's code)
        import traceback

        traceback.print_exc()
        sys.exit(5)
