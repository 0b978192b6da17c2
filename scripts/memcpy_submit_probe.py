#!/usr/bin/env python3
"""What one pinned host -> device cudaMemcpyAsync of 40 KiB (the size of one of the reference
batch's four packed chunks) costs the thread that calls it, under the conditions of the engine's
split walk: portable pinned memory (the engine's pool) or default, warm or right after the thread
touched 32 MiB (the walk's other memory traffic, or a training step's forward pass), alone or with
4 threads submitting at the same moment (on one stream or a stream each). Prints the median, p10
and p90 of the call's duration for each condition. Needs a CUDA GPU and libcudart; run on the GPU
host with `python3 scripts/memcpy_submit_probe.py` (results/NOTES.md, 2026-11-26).
"""
import ctypes
import glob
import statistics
import threading
import time

import torch

KIND_HOST_TO_DEVICE = 1  # cudaMemcpyHostToDevice
PORTABLE, DEFAULT = 1, 0  # cudaHostAlloc flags
SIZE = 40 << 10


def load_cudart():
    paths = sorted(glob.glob("/usr/local/cuda/lib64/libcudart.so*")) + ["libcudart.so"]
    rt = ctypes.CDLL(paths[0])
    rt.cudaHostAlloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_uint]
    rt.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                   ctypes.c_int, ctypes.c_void_p]
    return rt


def pinned(rt, flags):
    p = ctypes.c_void_p()
    assert rt.cudaHostAlloc(ctypes.byref(p), SIZE, flags) == 0
    ctypes.memset(p, 1, SIZE)
    return p


def measure(rt, label, flags, threads, own_streams, cold, iters=300):
    """Each of `threads` threads submits one copy per iteration, all at the same moment (a
    barrier), the device synchronized between iterations; `cold`: each first writes 32 MiB."""
    hosts = [pinned(rt, flags) for _ in range(threads)]
    devs = [torch.empty(SIZE, dtype=torch.uint8, device="cuda") for _ in range(threads)]
    streams = [torch.cuda.Stream() for _ in range(threads)]
    junks = [torch.zeros(32 << 20, dtype=torch.uint8) for _ in range(threads)] if cold else []
    times = [[] for _ in range(threads)]
    barrier = threading.Barrier(threads)

    def work(k):
        torch.cuda.set_device(0)
        stream = ctypes.c_void_p(streams[k if own_streams else 0].cuda_stream)
        dst = ctypes.c_void_p(devs[k].data_ptr())
        for _ in range(iters):
            if cold:
                junks[k].add_(1)
            barrier.wait()
            t0 = time.perf_counter_ns()
            assert rt.cudaMemcpyAsync(dst, hosts[k], SIZE, KIND_HOST_TO_DEVICE, stream) == 0
            times[k].append((time.perf_counter_ns() - t0) / 1000)
            barrier.wait()
            if k == 0:
                torch.cuda.synchronize()
            barrier.wait()

    workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    kept = sorted(x for t in times for x in t[20:])  # the first iterations warm up
    print(f"{label:<46} median {statistics.median(kept):6.2f} us  "
          f"p10 {kept[len(kept) // 10]:6.2f}  p90 {kept[9 * len(kept) // 10]:6.2f}")


def main():
    torch.cuda.init()
    torch.set_num_threads(1)  # the 32 MiB writes stay on the thread that measures
    rt = load_cudart()
    measure(rt, "default pinned, 1 thread, warm", DEFAULT, 1, False, False)
    measure(rt, "portable pinned, 1 thread, warm", PORTABLE, 1, False, False)
    measure(rt, "portable pinned, 1 thread, after 32 MiB", PORTABLE, 1, False, True)
    measure(rt, "portable pinned, 4 threads, one stream", PORTABLE, 4, False, False)
    measure(rt, "portable pinned, 4 threads, a stream each", PORTABLE, 4, True, False)
    measure(rt, "default pinned, 4 threads, one stream", DEFAULT, 4, False, False)
    measure(rt, "portable pinned, 4 threads, one stream, cold", PORTABLE, 4, False, True)


if __name__ == "__main__":
    main()
