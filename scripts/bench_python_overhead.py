#!/usr/bin/env python3
"""The Python module's own cost around the engine, on a config's batch (the 528-tensor
reference batch by default): how long start_copy() takes to return, start_copy().get() end to
end, a device synchronize after it (CUDA), dropping the handle, then the result, next to the
engine's own figures and the module's parts (stats(): the walk, the engine's start, the waits
and the build of the result). Each is given in wall time and in the calling thread's CPU time:
on a shared machine the second is the steadier (it leaves out the time other processes took
the core).

On a machine without a GPU, --device cpu leaves the engine almost nothing to do (tensors already
on the target come back as they are), so what remains is the module's walk of the structure, the
rebuild of the result and the hand-offs: the overhead, not a copy.

With --gap-ms and --rotation, each call copies the next of that many distinct batches after a
gap of that long, outside the clocks: the parts of a training step (bench_python.py's step is
--gap-ms 2 --rotation 8), to set beside those of calls back to back. --gap-mode says what the
thread does in the gap: sleep; spin (busy, touching no memory: is it the sleep that slows the
thread down?); or touch (busy writing over 32 MiB, as a forward pass evicts the caches).

Beside each call, torch's own cost of the same number of tensor objects, in the same loop: one
`split` of a buffer on the device into as many views as the batch has tensors (one operator,
its views made and wrapped in C++), and dropping such views two calls after they were made, as
the module drops a result (torch releases the GIL for every tensor object it tears down). The
module's `build` and `release` parts can be read against these. They run between the module's
calls, outside its clocks, but they leave the caches as they leave them: the module's figures
from before 2026-11-28 were taken without them. --yardstick 0 leaves them out, for a profile of
the module alone: under the sampling profiler they were 44 % of the main thread's samples back to
back, and most of its calls into the allocator (results/NOTES.md, 2026-12-02).

    python scripts/bench_python_overhead.py [--device cpu] [--calls 3000] [--background 0|1]
                                            [--gap-ms 0] [--rotation 1] [--gap-mode sleep]
                                            [--yardstick 1]
"""

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spec_batch import SpecBatch  # noqa: E402


TOUCH_BYTES = 32 << 20  # more than a last-level cache
TOUCH_CHUNK = 1 << 20
_touched = None


def gap(mode, ms):
    """The thread's gap between two copies, outside the clocks."""
    global _touched
    if mode == "sleep":
        time.sleep(ms / 1e3)
        return
    end = time.perf_counter_ns() + int(ms * 1e6)
    if mode == "spin":
        while time.perf_counter_ns() < end:
            pass
        return
    if _touched is None:
        _touched = (bytearray(TOUCH_BYTES), bytes(TOUCH_CHUNK))
    buffer, chunk = _touched
    offset = 0
    while time.perf_counter_ns() < end:
        buffer[offset:offset + TOUCH_CHUNK] = chunk  # one memcpy, in C
        offset = (offset + TOUCH_CHUNK) % TOUCH_BYTES


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(Path(__file__).resolve().parent.parent / "configs/streampetr.json"))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--background", type=int, choices=(0, 1), default=1, help="use_background_thread")
    parser.add_argument("--gap-ms", type=float, default=0.0, help="a gap before each call (--gap-mode), outside the clocks")
    parser.add_argument("--rotation", type=int, default=1, help="distinct batches, copied in turn")
    parser.add_argument("--gap-mode", choices=("sleep", "spin", "touch"), default="sleep",
                        help="what the thread does in the gap")
    parser.add_argument("--yardstick", type=int, choices=(0, 1), default=1,
                        help="torch's split and drop of as many views beside each call (0: none)")
    args = parser.parse_args(argv)
    if args.gap_ms < 0 or args.rotation < 1 or args.calls < 5:
        parser.error("--gap-ms must be >= 0, --rotation >= 1 and --calls >= 5")

    import mtc
    import torch
    from torch.utils._pytree import tree_leaves

    cuda = torch.device(args.device).type == "cuda"
    spec = SpecBatch(args.config)
    batches = [spec.build() for _ in range(args.rotation)]
    wall = {"start_copy returns": [], "start_copy + get": [], "synchronize after get": [],
            "drop handle": [], "drop result": []}
    cpu = {name: [] for name in wall}
    engine = []
    module = {}  # the module's own parts, stats()["module"]
    # torch's yardstick: views of one buffer, one per tensor of the batch, each as long in bytes.
    sizes = [t.numel() * t.element_size() for t in tree_leaves(batches[0]) if isinstance(t, torch.Tensor)]
    buffer = torch.empty(sum(sizes), dtype=torch.uint8, device=args.device)
    torch_parts = {f"torch: split into {len(sizes)}": [], f"torch: drop {len(sizes)} views": []}
    kept_views = []
    split_name, drop_name = torch_parts
    # The collector would run at arbitrary calls (every few hundred new objects): it is a cost
    # of the program, not of one call.
    gc.disable()
    for call in range(args.calls):
        batch = batches[call % args.rotation]
        if args.gap_ms > 0:
            gap(args.gap_mode, args.gap_ms)
        w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        handle = mtc.start_copy(batch, args.device, use_background_thread=bool(args.background))
        w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
        out = handle.get()
        w2, c2 = time.perf_counter_ns(), time.thread_time_ns()
        if cuda:
            torch.cuda.synchronize()  # bench_python.py's calls end with one
        w3, c3 = time.perf_counter_ns(), time.thread_time_ns()
        s = handle.stats()
        w4, c4 = time.perf_counter_ns(), time.thread_time_ns()
        # The handle first, as a call that returns handle.get() drops it (bench_python.py's
        # protocol times this part); the result when the next step replaces it.
        del handle
        w5, c5 = time.perf_counter_ns(), time.thread_time_ns()
        del out
        w6, c6 = time.perf_counter_ns(), time.thread_time_ns()
        for clock, t in ((wall, (w0, w1, w2, w3, w4, w5, w6)), (cpu, (c0, c1, c2, c3, c4, c5, c6))):
            clock["start_copy returns"].append(t[1] - t[0])
            clock["start_copy + get"].append(t[2] - t[0])
            clock["synchronize after get"].append(t[3] - t[2])
            clock["drop handle"].append(t[5] - t[4])
            clock["drop result"].append(t[6] - t[5])
        engine.append(s["queued_us"] + s["traverse_us"] + s["submit_us"] + s["outputs_us"])
        for part, us in s["module"].items():
            module.setdefault(part, []).append(us)
        if not args.yardstick:
            continue
        t0 = time.perf_counter_ns()
        kept_views.append(buffer.split(sizes))
        t1 = time.perf_counter_ns()
        dropped = kept_views.pop(0) if len(kept_views) > 2 else None
        has_dropped = dropped is not None
        t2 = time.perf_counter_ns()
        del dropped
        t3 = time.perf_counter_ns()
        torch_parts[split_name].append(t1 - t0)
        if has_dropped:
            torch_parts[drop_name].append(t3 - t2)
    gc.enable()
    skip = args.calls // 5  # warm-up
    print(f"mtc {mtc.__version__} from {Path(mtc.__file__).parent}, torch {torch.__version__}, "
          f"device {args.device}, use_background_thread={bool(args.background)}, {args.calls - skip} calls, "
          f"gap {args.gap_ms:g} ms ({args.gap_mode}), rotation {args.rotation}"
          + ("" if args.yardstick else ", no yardstick"))
    print(f"  {'':24} {'wall median':>12} {'wall p10':>9} {'CPU median':>11} {'CPU p10':>8}  (us)")
    for name in wall:
        w, c = sorted(wall[name][skip:]), sorted(cpu[name][skip:])
        print(f"  {name:24} {statistics.median(w) / 1e3:12.1f} {w[len(w) // 10] / 1e3:9.1f} "
              f"{statistics.median(c) / 1e3:11.1f} {c[len(c) // 10] / 1e3:8.1f}")
    e = sorted(engine[skip:])
    print(f"  {'engine (its stats)':24} {statistics.median(e):12.1f} {e[len(e) // 10]:9.1f}")
    for part, values in module.items():
        v = sorted(values[skip:])
        print(f"  {'module ' + part:24} {statistics.median(v):12.1f} {v[len(v) // 10]:9.1f}")
    for part, values in torch_parts.items() if args.yardstick else ():
        v = sorted(values[skip:])
        print(f"  {part:24} {statistics.median(v) / 1e3:12.1f} {v[len(v) // 10] / 1e3:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
