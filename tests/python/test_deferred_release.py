"""The deferred release of dropped results' tensors (src/python/mtc/_deferred.py): what is kept,
its bounds, turning it off, and its end at exit.

On a machine without a GPU the engine's CPU target returns tensors as they are; numpy arrays
become new tensors there, so their copies are what these tests keep.
"""

import gc
import os
import subprocess
import sys
import time
import weakref

import numpy as np
import pytest
import torch

import mtc
from mtc import _deferred
from support import ProgressWatcher, gpu_mark


@pytest.fixture(autouse=True)
def deferred_release_on():
    previous = mtc.set_deferred_release(True)
    mtc.release_deferred()
    yield
    mtc.release_deferred()
    mtc.set_deferred_release(previous)


def arrays(count, elements=4):
    return [np.arange(elements, dtype=np.int32) + i for i in range(count)]


def copy_and_drop(data, device="cpu"):
    """Copies `data`, drops the result; returns weak references to its tensors."""
    out = mtc.start_copy(data, device).get()
    refs = [weakref.ref(t) for t in out]
    del out
    return refs


def alive(refs):
    return sum(r() is not None for r in refs)


def test_a_dropped_result_lives_until_it_is_released():
    refs = copy_and_drop(arrays(16))
    assert alive(refs) == 16
    stats = mtc.deferred_release_stats()
    assert (stats["enabled"], stats["tensors"], stats["bytes"]) == (True, 16, 16 * 16)
    assert mtc.release_deferred() == 16
    assert alive(refs) == 0
    assert mtc.deferred_release_stats()["tensors"] == 0


def test_results_of_few_tensors_die_where_they_are_dropped():
    refs = copy_and_drop(arrays(15))
    assert alive(refs) == 0
    assert mtc.deferred_release_stats()["tensors"] == 0


def test_results_above_16_mib_die_where_they_are_dropped():
    refs = copy_and_drop(arrays(16, elements=(1 << 20) // 4 + 1))  # 16 MiB and 64 B
    assert alive(refs) == 0


def test_a_result_gets_the_room_the_budget_leaves():
    first = copy_and_drop(arrays(16))
    assert alive(first) == 16
    kept = mtc.deferred_release_stats()["tensors"]
    for _ in range(5):
        refs = copy_and_drop(arrays(40))
        stats = mtc.deferred_release_stats()
        # Earlier results' tensors count against the budget (set by this get()): a new result
        # is kept only up to it.
        assert alive(first) + alive(refs) <= stats["tensors"] <= max(kept, stats["budget"])
        kept = stats["tensors"]


def test_a_result_is_kept_up_to_the_budget():
    out = mtc.start_copy(arrays(200), "cpu").get()
    refs = [weakref.ref(t) for t in out]
    del out
    # The budget the get() set before it kept: at least 16, learned from its waits.
    budget = mtc.deferred_release_stats()["budget"]
    assert budget >= 16
    assert alive(refs) == min(budget, 200)
    assert all(r() is not None for r in refs[: min(budget, 200)])  # the first ones


def test_tensors_the_program_still_holds_outlive_the_release():
    out = mtc.start_copy(arrays(16), "cpu").get()
    kept = out[3]
    del out
    mtc.release_deferred()
    gc.collect()
    assert torch.equal(kept, torch.arange(4, dtype=torch.int32) + 3)


def test_leaves_already_on_the_target_are_not_kept():
    data = [torch.arange(4) for _ in range(20)]
    refs = copy_and_drop(data)
    assert alive(refs) == 20  # the inputs themselves
    assert mtc.deferred_release_stats()["tensors"] == 0


def test_turning_it_off_releases_what_is_kept_and_keeps_nothing_more():
    refs = copy_and_drop(arrays(16))
    assert mtc.set_deferred_release(False) is True
    assert alive(refs) == 0
    refs = copy_and_drop(arrays(16))
    assert alive(refs) == 0
    stats = mtc.deferred_release_stats()
    assert (stats["enabled"], stats["tensors"], stats["bytes"]) == (False, 0, 0)
    assert mtc.set_deferred_release(True) is False


def test_a_release_that_runs_python_code_which_copies_again():
    refs = copy_and_drop(arrays(16))
    copies = []
    # A weak reference's callback runs inside the release: it starts and finishes another copy,
    # which keeps its own result meanwhile.
    hook = weakref.ref(refs[0](), lambda _: copies.append(mtc.start_copy(arrays(16), "cpu").get()))
    assert mtc.release_deferred() >= 16
    assert hook() is None and len(copies) == 1
    assert [int(t[0]) for t in copies[0]] == list(range(16))


def test_get_lets_other_threads_run_while_it_helps_with_the_walk():
    # With tensors kept, get() walks its share of a worker's walk before releasing them: without
    # the GIL, as take_result() would.
    copy_and_drop(arrays(16))
    data = [torch.ones(2)] * 500_000
    with ProgressWatcher() as watcher:
        handle = mtc.start_copy(data, "cpu")
        start = time.perf_counter()
        out = handle.get()
        end = time.perf_counter()
    assert len(out) == len(data)
    assert watcher.coverage(start, end) >= 0.3, f"get() took {(end - start) * 1e3:.0f} ms"


@pytest.mark.parametrize("value, expected", [(None, True), ("1", True), ("0", False), (" 0 ", False)])
def test_the_setting_from_the_environment(value, expected):
    environ = {} if value is None else {"MTC_DEFER_RELEASE": value}
    assert _deferred.setting_from_environment(environ) is expected


@pytest.mark.parametrize("value", ["", "yes", "2", "true"])
def test_a_bad_setting_is_a_one_line_error_naming_the_variable(value):
    with pytest.raises(ValueError, match=r"^MTC_DEFER_RELEASE must be 0 or 1, not "):
        _deferred.setting_from_environment({"MTC_DEFER_RELEASE": value})


def run_child(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def test_the_environment_turns_it_off_at_import():
    child = run_child("import mtc; print(mtc.deferred_release_stats()['enabled'])", MTC_DEFER_RELEASE="0")
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "False"


def test_importing_with_a_bad_setting_fails_naming_it():
    child = run_child("import mtc", MTC_DEFER_RELEASE="on")
    assert child.returncode != 0
    assert "MTC_DEFER_RELEASE must be 0 or 1, not 'on'" in child.stderr


def test_an_interpreter_that_exits_with_tensors_kept_exits_cleanly():
    code = (
        "import mtc, numpy as np\n"
        "out = mtc.start_copy([np.arange(4) for _ in range(16)], 'cpu').get()\n"
        "del out\n"
        "assert mtc.deferred_release_stats()['tensors'] == 16\n"
        "print('done')\n"
    )
    child = run_child(code)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "done"


def test_a_later_copy_releases_them_while_the_device_works():
    batch = [torch.arange(8, dtype=torch.float32) + i for i in range(528)]
    # Device memory for three results in torch's cache first: an allocation that had to ask the
    # driver could wait for the device, and with it for the kernel below.
    held = [mtc.start_copy(batch, "cuda").get() for _ in range(3)]
    del held
    mtc.release_deferred()
    torch.cuda.synchronize()
    baseline = torch.cuda.memory_allocated()
    refs = copy_and_drop(batch, "cuda")
    kept = alive(refs)
    assert kept == min(mtc.deferred_release_stats()["budget"], 528) >= 16
    # The next copy is queued behind a kernel that keeps the stream busy for milliseconds: its
    # get() has its outputs at once and then waits for the device, time to release the first
    # result's tensors.
    torch.cuda._sleep(50_000_000)
    handle = mtc.start_copy(batch, "cuda")
    out = handle.get()
    module = handle.stats()["module"]
    assert module["released_tensors"] == kept, module
    assert alive(refs) == 0
    assert all(torch.equal(o.cpu(), b) for o, b in zip(out, batch))
    del out, handle  # the handle holds its copy's device memory too
    mtc.release_deferred()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == baseline


test_a_later_copy_releases_them_while_the_device_works.pytestmark = gpu_mark()
