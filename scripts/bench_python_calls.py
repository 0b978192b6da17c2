"""One timed call of a copy method as bench_python.py's patterns make it: the batch it copies,
the idle gap of a step, the previous output's death inside the clock and the closing
synchronize. Shared by the runs in blocks (bench_python.py) and the A/B (bench_python_ab.py)."""

import time

import torch

ROTATION = 8
IDLE_GAP_S = 0.002


def synchronize(device):
    if torch.device(device).type == "cuda" or torch.cuda.is_available():
        torch.cuda.synchronize()


def batch_of(batches, pattern, i):
    """The batch call `i` copies: the next of the rotation in a step, the first back to back."""
    return batches[i % len(batches)] if pattern == "step" else batches[0]


def timed_call(copy, batch, held, device, pattern, phases):
    """One call of `copy` on `batch` as `pattern` makes it, its output put in held[0] (the only
    reference the loop keeps to it); returns the call's time and its closing synchronize's (ns)."""
    if pattern == "step":
        time.sleep(IDLE_GAP_S)
    t0 = time.perf_counter_ns()
    if pattern == "step":
        held[0] = None  # the previous step's output dies inside the step
    # Back to back, as in the original package's evaluation (`_ = handle.get()`): the previous
    # call's output dies when the new one replaces it, inside the timed region.
    held[0] = copy(batch, phases)
    t1 = time.perf_counter_ns()
    synchronize(device)
    t2 = time.perf_counter_ns()
    return t2 - t0, t2 - t1
