"""The engine's own errors raised through the module, from start_copy and from get().

On the GPU host an engine error raised into Python once ended the interpreter (a segmentation
fault: a static copy of libstdc++ inside the module, docs/python.md, "Engine errors"). Each
group of cases runs in a child interpreter: a crash is then a failed test that names the case
and the signal, not the end of the test run. The GPU group runs on the GPU host only.
"""

import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

from support import gpu_mark

# Each case: (name, code that must raise, expected exception type name, a fragment of its
# message). The code runs with `torch` and `mtc` imported.
START = "mtc.start_copy([torch.ones(1), {{'a': torch.ones(2)}}], {device!r}, min_packed_alignment_bytes={align}, max_packed_chunk_bytes={chunk}, use_background_thread={bg})"

CPU_CASES = [
    *[(f"alignment 0, background {bg}", START.format(device="cpu", align=0, chunk=1 << 20, bg=bg),
       "ValueError", "mtc::start_copy: min_packed_alignment_bytes must be >= 1, got 0") for bg in (True, False)],
    ("alignment -4", START.format(device="cpu", align=-4, chunk=1 << 20, bg=True),
     "ValueError", "must be >= 1, got -4"),
    ("chunk 0", START.format(device="cpu", align=16, chunk=0, bg=True),
     "ValueError", "mtc::start_copy: max_packed_chunk_bytes must be > 0, got 0"),
    ("unsupported target", START.format(device="meta", align=16, chunk=1 << 20, bg=True),
     "ValueError", "unsupported target device meta"),
    *[(f"sparse leaf, background {bg}", f"mtc.start_copy([1, torch.ones(3).to_sparse()], 'cpu', use_background_thread={bg}).get()",
       "RuntimeError", "has layout Sparse") for bg in (True, False)],
    ("leaf on meta", "mtc.start_copy({'m': torch.empty(2, device='meta')}, 'cpu').get()",
     "RuntimeError", "is on meta"),
    ("quantized leaf", "mtc.start_copy([torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)], 'cpu').get()",
     "RuntimeError", "is quantized"),
    ("ready() of a failed copy", "h = mtc.start_copy([torch.ones(3).to_sparse()], 'cpu')\nwhile not h.ready(): pass",
     "RuntimeError", "layout Sparse"),
]

CUDA_LESS_CASES = [
    ("cuda without CUDA", START.format(device="cuda", align=16, chunk=1 << 20, bg=True),
     "ValueError", "requested but no CUDA device is available"),
]

GPU_CASES = [
    ("index that does not exist", "mtc.start_copy([torch.ones(1)], f'cuda:{torch.cuda.device_count()}')",
     "ValueError", "CUDA device(s) visible)"),
    *[(f"alignment 0 to cuda, background {bg}", START.format(device="cuda", align=0, chunk=1 << 20, bg=bg),
       "ValueError", "must be >= 1, got 0") for bg in (True, False)],
    ("chunk -1 to cuda", START.format(device="cuda:0", align=16, chunk=-1, bg=True),
     "ValueError", "must be > 0, got -1"),
    ("sparse leaf to cuda", "mtc.start_copy([torch.ones(3).to_sparse()], 'cuda').get()",
     "RuntimeError", "layout Sparse"),
    # MTC_PINNED_POOL_LIMIT_BYTES=4096 in the child: 256 KiB of staging does not fit. The message
    # carries numbers, as the two errors that crashed did.
    *[(f"pinned pool limit, background {bg}", f"mtc.start_copy([torch.ones(1 << 14) for _ in range(4)], 'cuda', use_background_thread={bg}).get()",
       "RuntimeError", "bytes does not fit the pinned pool's limit of 4096 bytes") for bg in (True, False)],
]

RUNNER = textwrap.dedent("""
    import sys, torch, mtc
    for name, code in CASES:
        print("case", name, flush=True)
        try:
            exec(code)
        except Exception as error:
            print("raised", type(error).__name__, str(error).replace("\\n", " | "), flush=True)
        else:
            print("raised nothing", flush=True)
""")


def run_cases(cases, **env):
    """Runs `cases` in a child interpreter; returns {name: 'Type message'} and the exit status."""
    program = f"CASES = {[(name, code) for name, code, _, _ in cases]!r}\n" + RUNNER
    child = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, **env), cwd=os.path.dirname(__file__))
    results, current = {}, None
    for line in child.stdout.splitlines():
        if line.startswith("case "):
            current = line[5:]
        elif line.startswith("raised ") and current is not None:
            results[current] = line[7:]
    if child.returncode != 0:
        died = f"signal {signal.Signals(-child.returncode).name}" if child.returncode < 0 else f"exit {child.returncode}"
        pytest.fail(f"the child interpreter died ({died}) in case {current!r}:\n{child.stderr[-3000:]}")
    return results


def check(cases, results):
    for name, _, kind, fragment in cases:
        got = results.get(name, "no result")
        assert got.startswith(kind + " ") and fragment in got, f"{name}: {got}"
        assert "Exception raised from" not in got, f"{name}: a C++ backtrace in the message"


def test_engine_errors_through_the_module_on_the_cpu():
    cases = CPU_CASES + ([] if torch.cuda.is_available() else CUDA_LESS_CASES)
    check(cases, run_cases(cases))


def test_engine_errors_through_the_module_on_the_gpu():
    check(GPU_CASES, run_cases(GPU_CASES, MTC_PINNED_POOL_LIMIT_BYTES="4096"))


test_engine_errors_through_the_module_on_the_gpu.pytestmark = gpu_mark()
