#!/usr/bin/env python3
"""Summarizes a Google Benchmark JSON of mtc_engine_bench: medians, and the ratios that the
engine's speed targets are stated in (all figures from the one run in the file). Whole-copy
benchmarks carry median_us, the median of their iterations (Google Benchmark's own time is
their mean); the ratios use it where present, as mtc-bench reports medians."""
import itertools
import json
import sys

from gbench_units import real_time_us


def main(path):
    with open(path) as f:
        data = json.load(f)
    ctx = data.get("context", {})
    medians = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name", "median") != "median" or b.get("error_occurred"):
            continue
        name = b["run_name"] if "run_name" in b else b["name"]
        medians[name] = b
    print(f"host {ctx.get('host_name')} date {ctx.get('date')} cpus {ctx.get('num_cpus')}")
    steps = ["median_us", "start_us", "queued_us", "traverse_us", "submit_us", "outputs_us", "walk_threads",
             "early_wakes"]
    # The packed chunks' allocations and CUDA calls (CopyStats::allocate_us, driver_us), after
    # submit_us: columns only where some case reported them (runs before they existed did not).
    for k in ("driver_us", "allocate_us"):
        if any(k in b for b in medians.values()):
            steps.insert(steps.index("submit_us") + 1, k)
    # A split walk's parts (CopyStats::split_*), after walk_threads: only where reported.
    split = [k for k in ("split_join_us", "split_leaf_ns", "split_stage_us", "split_wait_us",
                         "split_queue_us") if any(k in b for b in medians.values())]
    at = steps.index("walk_threads") + 1
    steps[at:at] = split
    # Outputs made in offered TensorImpls, per copy: a column only where some case offered them.
    if any("recycled" in b for b in medians.values()):
        steps.append("recycled")
    # The handle's drop after such a copy (its reused outputs' previous storages die there).
    if any("drop_us" in b for b in medians.values()):
        steps.append("drop_us")
    # The caller's free of the previous result beside the walk (bit 256 cases).
    if any("free_us" in b for b in medians.values()):
        steps.append("free_us")
    print("| benchmark | time (us) | " + " | ".join(steps) + " |")
    print("|---" * (2 + len(steps)) + "|")
    for name, b in medians.items():
        t = real_time_us(b)
        cells = ["" if b.get(k) is None else f"{b[k]:.1f}" for k in steps]
        print(f"| {name} | {t:.1f} | " + " | ".join(cells) + " |")

    # Counters of the other benchmarks (bandwidth, pool footprint), one line each.
    known = set(steps) | {"iterations", "real_time", "cpu_time", "bytes_per_second", "items_per_second"}
    others = []
    for name, b in medians.items():
        extra = {k: v for k, v in b.items() if isinstance(v, (int, float)) and k not in known
                 and k not in ("repetitions", "repetition_index", "threads", "family_index",
                               "per_family_instance_index")}
        if any(k.endswith("GBps") or k.startswith(("pool", "peak", "grew", "slab", "gpu")) for k in extra):
            others.append((name, extra))
    if others:
        print()
        for name, extra in others:
            print(f"- {name}: " + ", ".join(f"{k} {v:.3g}" for k, v in sorted(extra.items())))

    def bench(prefix):
        return next((b for name, b in medians.items() if name.startswith(prefix)), None)

    def gpus_with_alone(b):
        """The GPUs of a benchmark that ran every GPU or one alone; none if a GPU lacks its time alone."""
        gpus = sorted(k[:-3] for k in b if k.startswith("gpu") and k.endswith("_us")
                      and not k.endswith("_alone_us")) if b else []
        return [] if any(f"{g}_alone_us" not in b for g in gpus) else gpus

    def own_alone(b):
        """Each GPU's time with every GPU as a ratio to its own time alone: "1.02-1.10x its own time
        alone (ALONE-ALONE us)", or None."""
        gpus = gpus_with_alone(b)
        if not gpus:
            return None
        own = [b[f"{g}_us"] / b[f"{g}_alone_us"] for g in gpus]
        alone = [b[f"{g}_alone_us"] for g in gpus]
        return f"{min(own):.2f}-{max(own):.2f}x its own time alone ({min(alone):.1f}-{max(alone):.1f} us)"

    def first_alone(b):
        first = [b[f"{g}_us"] / b["gpu0_alone_us"] for g in gpus_with_alone(b)]
        return f"{min(first):.2f}-{max(first):.2f}x"

    def us(prefix):
        b = bench(prefix)
        return b.get("median_us", real_time_us(b)) if b else None

    h2d = "BM_EngineCopy<Direction::kHostToDevice>"
    to = "BM_PerTensorTo<Direction::kHostToDevice>"
    e1, e8 = us(f"{h2d}/1/7/"), us(f"{h2d}/8/7/")
    t1, t8 = us(f"{to}/1/"), us(f"{to}/8/")
    if e1 and t1:
        print(f"\nreference batch H2D: engine {e1:.1f} us, per-tensor .to() {t1:.1f} us, speedup {t1 / e1:.1f}x")
    if e1 and e8:
        print(f"marginal cost per extra tensor: {(e8 - e1) / (4224 - 528):.3f} us")
    if e8 and t8:
        print(f"4,224 tensors H2D: engine {e8:.1f} us, .to() {t8:.1f} us, speedup {t8 / e8:.1f}x")
    d1 = us("BM_EngineCopy<Direction::kDeviceToHost>/1/7/")
    dt = us("BM_PerTensorTo<Direction::kDeviceToHost>/1/")
    if d1 and dt:
        print(f"reference batch D2H: engine {d1:.1f} us, .to() {dt:.1f} us, speedup {dt / d1:.1f}x")
    cold, step = us(f"{h2d}/1/15/"), us(f"{h2d}/1/399/")
    if e1 and cold:
        print(f"after a 5 ms idle gap: {cold:.1f} us = {cold / e1:.2f}x the hot copy (target <= 1.3x)")
    if e1 and step:
        print(f"training step (fresh batch, idle gap, previous freed inside): {step:.1f} us = {step / e1:.2f}x hot"
              + (f", {t1 / step:.1f}x .to()" if t1 else ""))
    # The training step with workers that wake ahead of the copy against without (bit 512).
    for direction, family in (("h2d", h2d), ("d2h", "BM_EngineCopy<Direction::kDeviceToHost>")):
        for gap, on, off in (("sleeping", 399, 911), ("busy", 1423, 1935),
                             ("200 us sleeping", 2447, 2959), ("200 us busy", 3471, 3983)):
            ahead, without = us(f"{family}/1/{on}/"), us(f"{family}/1/{off}/")
            if ahead and without:
                print(f"{direction} step after a {gap} gap: {ahead:.1f} us with workers that wake ahead, "
                      f"{without:.1f} us without ({ahead / without:.2f}x)")
    for name, b in medians.items():
        if name.startswith("BM_LargePageableToDevice/") and "of_pinned" in b:
            ring = (f", ring {b['slots']:.0f} x {b['slot_KiB']:.0f} KiB" if "slots" in b else "")
            if "one_queuer" in b:
                ring += (", one queuer" + (f" and {b['crew']:.0f} crew threads" if b.get("crew") else ", no crew")
                         if b["one_queuer"] else ", each thread queues its own DMA")
            if b.get("one_queuer") and b.get("piece_KiB"):
                ring += (", whole chunks" if b["piece_KiB"] >= b.get("slot_KiB", 0)
                         else f", pieces of {b['piece_KiB']:.0f} KiB")
            print(f"64 x 4 MiB pageable H2D, {b['fill_threads']:.0f} thread(s){ring}: {b['engine_GBps']:.1f} GB/s = "
                  f"{100 * b['of_pinned']:.0f} % of one pinned copy ({b['pinned_GBps']:.1f} GB/s; target >= 80 %)")
            if b.get("prof_threads") and b.get("prof_wall_us"):
                busy = b["prof_threads"] * b["prof_wall_us"]
                print(f"  its last copy: {b['prof_threads']:.0f} threads filled, {100 * b['prof_fill_us'] / busy:.0f} % "
                      f"of their time filling, {100 * b['prof_wait_us'] / busy:.0f} % waiting for a slot; the queuer "
                      f"{b['prof_pump_us']:.0f} us queuing, {b['prof_idle_us']:.0f} us idle, of {b['prof_wall_us']:.0f} us")
    for name, b in medians.items():
        if name.startswith("BM_PageableFill/") and "fill_GBps" in b:
            threads, dma = name.split("/")[1:3]
            piece = (f", {b['piece_KiB']:.0f} KiB pieces" if b.get("piece_KiB", 2048) < 2048 else "")
            print(f"the upload's fill alone, {threads} thread(s){piece}{', GPU reading host memory meanwhile' if dma == '1' else ''}: "
                  f"{b['fill_GBps']:.1f} GB/s" + (f" (DMA {b['dma_GBps']:.1f} GB/s)" if "dma_GBps" in b else ""))
    for direction, arg in (("h2d", 1), ("d2h", 0)):
        engine, to = us(f"BM_MixedBatch/{arg}/0/0/"), us(f"BM_MixedBatch/{arg}/1/0/")
        if engine and to:
            print(f"mixed batch {direction}: engine {engine:.1f} us, .to() {to:.1f} us, speedup {to / engine:.1f}x")
    queuer, engine = us("BM_MixedBatch/1/0/1/"), us("BM_MixedBatch/1/0/0/")
    if queuer and engine:
        print(f"mixed batch h2d, one thread queuing the upload's DMAs: {queuer:.1f} us "
              f"({queuer / engine:.2f}x each thread queuing its own)")
    def spans(together, base):
        ratios = [together[k] / base for k in sorted(together) if k.startswith("gpu") and k.endswith("_us")]
        return f"{min(ratios):.2f}-{max(ratios):.2f}x"

    # BM_MultiGpuCopy/{direction}/{design}/{spin_us}/{variant}: each design against GPU 0 alone
    # with the same spin and variant (mode 2: a released thread as the others; mode 3: the
    # benchmark's own thread).
    variants = {0: "", 1: ", TensorImpl pool off", 2: ", dicts typed Dict[str, Any]", 4: ", no early wakes"}
    for direction, arg in (("CPU->GPU", 0), ("GPU->CPU", 1)):
        for spin in (0, 200, 2000):
            for variant, named in variants.items():
                alone = bench(f"BM_MultiGpuCopy/{arg}/2/{spin}/{variant}/")
                own = bench(f"BM_MultiGpuCopy/{arg}/3/{spin}/{variant}/")
                if not (alone and alone.get("gpu0_us")):
                    continue
                base = alone["gpu0_us"]
                if own and own.get("gpu0_us"):
                    print(f"{direction}, workers spin {spin} us: GPU 0 alone {base:.1f} us from a released thread, "
                          f"{own['gpu0_us']:.1f} us from the benchmark's own thread")
                for mode, design in ((0, "a worker pool per GPU"), (1, "one pool for all")):
                    b = bench(f"BM_MultiGpuCopy/{arg}/{mode}/{spin}/{variant}/")
                    if not b:
                        continue
                    print(f"{direction}, every GPU at once in one process, {design}, workers spin {spin} us{named}: "
                          f"each GPU {spans(b, base)} GPU 0 alone ({base:.1f} us), the slowest "
                          f"{b['slowest_us'] / base:.2f}x (target <= 1.2x at 2 and 4 GPUs)")
    # Modes 4 and 5: each iteration (each run of 32) every GPU or one alone, at random: each GPU
    # against its own time alone.
    # Mode 5 also in training steps (variants 5 and 6), and with idle workers that sleep at once
    # or spin 2 ms.
    for (direction, arg), (mode, spin, variant, runs) in itertools.product(
            (("CPU->GPU", 0), ("GPU->CPU", 1)),
            ((4, 200, 0, ""), (5, 200, 0, " in runs of 32 copies"),
             (5, 0, 0, " in runs of 32 copies, workers spin 0 us"),
             (5, 2000, 0, " in runs of 32 copies, workers spin 2000 us"),
             (5, 200, 1, " in runs of 32 copies, TensorImpl pool off"),
             (5, 200, 7, " in runs of 32 copies, TensorImpl and counter pools in one list for every GPU"),
             (5, 200, 8, " in runs of 32 copies, TensorImpl and counter pools in a shard per GPU"),
             (5, 200, 9, " in runs of 32 copies, version counters not pooled"),
             (5, 200, 5, " in runs of 32 training steps (2 ms sleeping gap)"),
             (5, 200, 6, " in runs of 32 training steps (2 ms busy gap)"))):
        b = bench(f"BM_MultiGpuCopy/{arg}/{mode}/{spin}/{variant}/")
        if ratios := own_alone(b):
            print(f"{direction}, every GPU at once in one process or one alone at random{runs}: each GPU "
                  f"{ratios}, {first_alone(b)} GPU 0 alone (target <= 1.2x at 2 and 4 GPUs)")
    # BM_MultiGpuParts/{part}/{alone}/{variant}: a CPU->GPU copy's walk (no CUDA call) and its
    # driver calls, every GPU at once against GPU 0 alone.
    parts = ((0, 0, "the walk alone (no CUDA call)"), (0, 1, "the walk alone, TensorImpl pool off"),
             (0, 2, "the walk alone, dicts typed Dict[str, Any]"),
             (0, 3, "the walk alone to the CPU (new containers only)"), (1, 0, "the driver's calls alone"))
    for arg, variant, part in parts:
        alone, together = bench(f"BM_MultiGpuParts/{arg}/1/{variant}/"), bench(f"BM_MultiGpuParts/{arg}/0/{variant}/")
        if not (alone and alone.get("gpu0_us") and together):
            continue
        base = alone["gpu0_us"]
        line = (f"CPU->GPU copy's parts, {part}, every GPU at once in one process: each GPU "
                f"{spans(together, base)} GPU 0 alone ({base:.1f} us)")
        if "submit_us" in together and "submit_us" in alone:
            line += f"; the calls before the wait {together['submit_us']:.1f} us against {alone['submit_us']:.1f} alone"
        print(line)
    # The walk parts with every GPU or one alone in runs of 32: each GPU against its own time alone.
    for _, variant, part in parts[:4] + ((0, 7, "the walk alone, TensorImpl and counter pools in one list"),
                                         (0, 8, "the walk alone, TensorImpl and counter pools in a shard per GPU"),
                                         (0, 9, "the walk alone, version counters not pooled")):
        if ratios := own_alone(bench(f"BM_MultiGpuParts/0/2/{variant}/")):
            print(f"CPU->GPU copy's parts, {part}, every GPU at once in one process or one alone in runs of 32: "
                  f"each GPU {ratios}")
    pinned_outputs, to = us("BM_MixedBatch/0/2/"), us("BM_MixedBatch/0/1/")
    if pinned_outputs and to:
        print(f"mixed batch d2h, pinned outputs: engine {pinned_outputs:.1f} us, speedup {to / pinned_outputs:.1f}x")
    for name, b in medians.items():
        if name.startswith("BM_PinnedPoolFootprint") and "pool_over_peak" in b:
            levelled = b["grew_after_1000"] == 0 and b["slab_allocations_after_1000"] == 0
            print(f"pinned pool after 10,000 copies: {b['pool_bytes']:.0f} B for a peak of {b['peak_in_flight']:.0f} B "
                  f"in flight = {b['pool_over_peak']:.2f}x (target <= 1.25), "
                  f"{'levelled off' if levelled else 'STILL GROWING'} after 1,000 copies")


if __name__ == "__main__":
    main(sys.argv[1])
