#!/usr/bin/env python3
"""scripts/summarize-microbench.py on a synthetic Google Benchmark file whose ratios are known:
the several-GPU designs against GPU 0 alone with the same worker spin, the step with workers that
wake ahead against without, and the medians table (times in each benchmark's own unit).

    python3 tests/scripts/summarize_microbench_test.py
"""
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUMMARY = ROOT / "scripts" / "summarize-microbench.py"


def bench(name, **counters):
    entry = {"name": name, "run_name": name, "aggregate_name": "median", "real_time": 1.0,
             "time_unit": "us"}
    entry.update(counters)
    return entry


def summarize(benchmarks):
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "bench.json"
        path.write_text(json.dumps({"context": {"num_cpus": 64}, "benchmarks": benchmarks}))
        done = subprocess.run([sys.executable, str(SUMMARY), str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def main():
    suffix = "min_time:0.300/manual_time"
    out = summarize([
        # CPU->GPU, spin 200: alone 100 us (released thread), 90 us (benchmark's thread).
        bench(f"BM_MultiGpuCopy/0/2/200/0/{suffix}", gpu0_us=100.0, slowest_us=100.0),
        bench(f"BM_MultiGpuCopy/0/3/200/0/{suffix}", gpu0_us=90.0, slowest_us=90.0),
        bench(f"BM_MultiGpuCopy/0/0/200/0/{suffix}", gpu0_us=110.0, gpu1_us=125.0, slowest_us=130.0),
        # Spin 2000: its own alone, so the same per-GPU times give other ratios.
        bench(f"BM_MultiGpuCopy/0/2/2000/0/{suffix}", gpu0_us=50.0, slowest_us=50.0),
        bench(f"BM_MultiGpuCopy/0/0/2000/0/{suffix}", gpu0_us=110.0, gpu1_us=125.0, slowest_us=130.0),
        # GPU->CPU without an alone figure: no ratio line for it.
        bench(f"BM_MultiGpuCopy/1/0/200/0/{suffix}", gpu0_us=300.0, gpu1_us=310.0, slowest_us=320.0),
        # The step with workers that wake ahead (399) and without (911), CPU->GPU only.
        dict(bench("BM_EngineCopy<Direction::kHostToDevice>/1/399/iterations:100/manual_time",
                   median_us=300.0, early_wakes=3.9)),
        bench("BM_EngineCopy<Direction::kHostToDevice>/1/911/iterations:100/manual_time", median_us=400.0,
              allocate_us=12.5, driver_us=7.5),
        # The same after a 200 us gap (bit 2048).
        bench("BM_EngineCopy<Direction::kHostToDevice>/1/2447/iterations:100/manual_time", median_us=150.0),
        bench("BM_EngineCopy<Direction::kHostToDevice>/1/2959/iterations:100/manual_time", median_us=200.0),
        # A copy's parts: the walk (no alone figure: no line), the driver's calls with their submission.
        bench(f"BM_MultiGpuParts/0/0/0/{suffix}", gpu0_us=90.0, gpu1_us=95.0, slowest_us=96.0),
        bench(f"BM_MultiGpuParts/1/1/0/{suffix}", gpu0_us=40.0, slowest_us=40.0, submit_us=20.0),
        bench(f"BM_MultiGpuParts/1/0/0/{suffix}", gpu0_us=48.0, gpu1_us=60.0, slowest_us=61.0, submit_us=30.0),
        # A variant (the TensorImpl pool off) against its own alone.
        bench(f"BM_MultiGpuCopy/0/2/200/1/{suffix}", gpu0_us=80.0, slowest_us=80.0),
        bench(f"BM_MultiGpuCopy/0/0/200/1/{suffix}", gpu0_us=88.0, gpu1_us=96.0, slowest_us=100.0),
        # Every GPU or one alone at random: GPU 1 is slower alone too.
        bench(f"BM_MultiGpuCopy/1/4/200/0/{suffix}", gpu0_us=110.0, gpu1_us=150.0, gpu0_alone_us=100.0,
              gpu1_alone_us=140.0, slowest_us=150.0),
        # In runs of 32 (mode 5), CPU->GPU; a GPU without its time alone gives no line.
        bench(f"BM_MultiGpuCopy/0/5/200/0/{suffix}", gpu0_us=120.0, gpu1_us=130.0, gpu0_alone_us=100.0,
              gpu1_alone_us=100.0, slowest_us=135.0),
        bench(f"BM_MultiGpuCopy/0/4/200/0/{suffix}", gpu0_us=120.0, gpu1_us=130.0, gpu0_alone_us=100.0,
              slowest_us=135.0),
        # Training steps with a busy gap, and workers that sleep at once, each against its own alone.
        bench(f"BM_MultiGpuCopy/1/5/200/6/{suffix}", gpu0_us=420.0, gpu1_us=440.0, gpu0_alone_us=400.0,
              gpu1_alone_us=400.0, slowest_us=450.0),
        bench(f"BM_MultiGpuCopy/0/5/0/0/{suffix}", gpu0_us=150.0, gpu1_us=160.0, gpu0_alone_us=125.0,
              gpu1_alone_us=100.0, slowest_us=170.0),
        # The TensorImpl pool in shards (variant 8; 7 is not read: it meant the opposite once).
        bench(f"BM_MultiGpuCopy/0/5/200/8/{suffix}", gpu0_us=105.0, gpu1_us=110.0, gpu0_alone_us=100.0,
              gpu1_alone_us=100.0, slowest_us=112.0),
        bench(f"BM_MultiGpuCopy/0/5/200/7/{suffix}", gpu0_us=900.0, gpu1_us=900.0, gpu0_alone_us=100.0,
              gpu1_alone_us=100.0, slowest_us=900.0),
        # The walk part, each GPU against its own time alone.
        bench(f"BM_MultiGpuParts/0/2/0/{suffix}", gpu0_us=120.0, gpu1_us=150.0, gpu0_alone_us=100.0,
              gpu1_alone_us=100.0, slowest_us=150.0),
        # An errored benchmark is left out.
        dict(bench(f"BM_MultiGpuCopy/1/2/200/0/{suffix}", gpu0_us=1.0), error_occurred=True),
        # Times in the benchmark's own unit: 2.5 ms, 750 ns and, without a unit, ns.
        dict(bench("BM_FreeResult/1"), real_time=2.5, time_unit="ms"),
        dict(bench("BM_FreeResult/2"), real_time=750.0, time_unit="ns"),
        {k: v for k, v in dict(bench("BM_FreeResult/3"), real_time=1500.0).items() if k != "time_unit"},
    ])
    assert "| BM_FreeResult/1 | 2500.0 |" in out, out
    assert "| BM_FreeResult/2 | 0.8 |" in out and "| BM_FreeResult/3 | 1.5 |" in out, out
    assert ("CPU->GPU, workers spin 200 us: GPU 0 alone 100.0 us from a released thread, "
            "90.0 us from the benchmark's own thread") in out, out
    assert ("CPU->GPU, every GPU at once in one process, a worker pool per GPU, workers spin 200 us: "
            "each GPU 1.10-1.25x GPU 0 alone (100.0 us), the slowest 1.30x") in out, out
    assert ("a worker pool per GPU, workers spin 2000 us: each GPU 2.20-2.50x GPU 0 alone (50.0 us), "
            "the slowest 2.60x") in out, out
    assert "one pool for all" not in out, out
    assert "GPU->CPU, every GPU at once in one process, a worker pool" not in out, out
    assert "| BM_MultiGpuCopy/0/0/200/0/min_time:0.300/manual_time | 1.0 |" in out, out
    assert ("h2d step after a sleeping gap: 300.0 us with workers that wake ahead, 400.0 us without "
            "(0.75x)") in out, out
    assert ("h2d step after a 200 us sleeping gap: 150.0 us with workers that wake ahead, 200.0 us "
            "without (0.75x)") in out, out
    assert "| 300.0 |" in out and "| 3.9 |" in out, out
    # The submission's parts, after submit_us, where a case reported them.
    assert "| submit_us | allocate_us | driver_us | outputs_us |" in out, out
    assert "| 12.5 | 7.5 |" in out, out
    assert "step after a busy gap" not in out and "d2h step" not in out, out
    assert ("CPU->GPU copy's parts, the driver's calls alone, every GPU at once in one process: each GPU "
            "1.20-1.50x GPU 0 alone (40.0 us); the calls before the wait 30.0 us against 20.0 alone") in out, out
    assert "the walk alone (no CUDA call), every GPU at once in one process:" not in out, out
    assert ("CPU->GPU, every GPU at once in one process or one alone at random in runs of 32 copies: each GPU "
            "1.20-1.30x its own time alone (100.0-100.0 us), 1.20-1.30x GPU 0 alone") in out, out
    assert "CPU->GPU, every GPU at once in one process or one alone at random:" not in out, out
    assert ("GPU->CPU, every GPU at once in one process or one alone at random: each GPU 1.07-1.10x its own "
            "time alone (100.0-140.0 us), 1.10-1.50x GPU 0 alone") in out, out
    assert ("a worker pool per GPU, workers spin 200 us, TensorImpl pool off: each GPU 1.10-1.20x GPU 0 alone "
            "(80.0 us), the slowest 1.25x") in out, out
    assert ("GPU->CPU, every GPU at once in one process or one alone at random in runs of 32 training steps "
            "(2 ms busy gap): each GPU 1.05-1.10x its own time alone (400.0-400.0 us), 1.05-1.10x GPU 0 alone") in out, out
    assert ("CPU->GPU, every GPU at once in one process or one alone at random in runs of 32 copies, workers spin "
            "0 us: each GPU 1.20-1.60x its own time alone (100.0-125.0 us), 1.20-1.28x GPU 0 alone") in out, out
    assert "(2 ms sleeping gap)" not in out and "runs of 32 copies, workers spin 2000 us" not in out, out
    assert ("CPU->GPU copy's parts, the walk alone (no CUDA call), every GPU at once in one process or one alone "
            "in runs of 32: each GPU 1.20-1.50x its own time alone (100.0-100.0 us)") in out, out
    assert "the walk alone to the CPU (new containers only), every GPU at once in one process or one" not in out, out
    assert ("CPU->GPU, every GPU at once in one process or one alone at random in runs of 32 copies, TensorImpl and "
            "counter pools in a shard per GPU: each GPU 1.05-1.10x its own time alone (100.0-100.0 us)") in out, out
    assert ("TensorImpl and counter pools in one list for every GPU: each GPU 9.00-9.00x its own time alone") in out, out
    assert "recycled" not in out, out  # no case offered outputs: no column for them
    offered = summarize([
        bench("BM_EngineCopy<Direction::kHostToDevice>/1/391/min_time:0.300/manual_time", median_us=230.0),
        bench("BM_EngineCopy<Direction::kHostToDevice>/1/16777607/min_time:0.300/manual_time", median_us=290.0,
              recycled=528.0),
    ])
    assert "| walk_threads | early_wakes | recycled |" in offered, offered
    assert "/16777607/min_time:0.300/manual_time | 1.0 | 290.0 |" in offered and "| 528.0 |" in offered, offered
    print("summarize-microbench: the several-GPU ratios, the step with and without early wakes, the "
          "reused outputs' column and the time units hold")


if __name__ == "__main__":
    main()
