"""The deferred release of dropped results' tensors (src/python/mtc/_deferred.py): what is kept,
its bounds, turning it off, and its end at exit.

On a machine without a GPU the engine's CPU target returns tensors as they are; numpy arrays
become new tensors there, so their copies are what these tests keep.
"""

import gc
import os
import subprocess
import sys
import weakref

import numpy as np
import pytest
import torch

import mtc
from mtc import _deferred
from support import gpu_mark


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
    refs = copy_and_drop(arrays(20))
    assert alive(refs) == 20
    stats = mtc.deferred_release_stats()
    assert stats == {"enabled": True, "tensors": 20, "bytes": 20 * 16}
    assert mtc.release_deferred() == 20
    assert alive(refs) == 0
    assert mtc.deferred_release_stats()["tensors"] == 0


def test_results_of_few_tensors_die_where_they_are_dropped():
    refs = copy_and_drop(arrays(15))
    assert alive(refs) == 0
    assert mtc.deferred_release_stats()["tensors"] == 0


def test_results_above_16_mib_die_where_they_are_dropped():
    refs = copy_and_drop(arrays(16, elements=(1 << 20) // 4 + 1))  # 16 MiB and 64 B
    assert alive(refs) == 0


def test_at_most_two_results_are_kept():
    first = copy_and_drop(arrays(20))
    second = copy_and_drop(arrays(20))
    third = copy_and_drop(arrays(20))
    assert alive(first) == 0
    assert alive(second) + alive(third) == mtc.deferred_release_stats()["tensors"] <= 40
    assert alive(third) == 20


def test_tensors_the_program_still_holds_outlive_the_release():
    out = mtc.start_copy(arrays(20), "cpu").get()
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
    refs = copy_and_drop(arrays(20))
    assert mtc.set_deferred_release(False) is True
    assert alive(refs) == 0
    refs = copy_and_drop(arrays(20))
    assert alive(refs) == 0
    assert mtc.deferred_release_stats() == {"enabled": False, "tensors": 0, "bytes": 0}
    assert mtc.set_deferred_release(True) is False


def test_a_release_that_runs_python_code_which_copies_again():
    refs = copy_and_drop(arrays(20))
    copies = []
    # A weak reference's callback runs inside the release: it starts and finishes another copy,
    # which keeps its own result meanwhile.
    hook = weakref.ref(refs[0](), lambda _: copies.append(mtc.start_copy(arrays(20), "cpu").get()))
    assert mtc.release_deferred() >= 20
    assert hook() is None and len(copies) == 1
    assert [int(t[0]) for t in copies[0]] == list(range(20))


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
        "out = mtc.start_copy([np.arange(4) for _ in range(64)], 'cpu').get()\n"
        "del out\n"
        "assert mtc.deferred_release_stats()['tensors'] == 64\n"
        "print('done')\n"
    )
    child = run_child(code)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "done"


def test_gpu_results_are_kept_and_released_by_later_copies():
    batch = [torch.arange(8, dtype=torch.float32) + i for i in range(528)]
    torch.cuda.synchronize()
    baseline = torch.cuda.memory_allocated()
    refs = copy_and_drop(batch, "cuda")
    assert alive(refs) == 528
    released = 0
    for _ in range(50):
        handle = mtc.start_copy(batch, "cuda")
        out = handle.get()
        released += handle.stats()["module"]["released_tensors"]
        del out
    assert alive(refs) == 0
    # The workers' walk of 528 tensors leaves the caller time to release some, each copy.
    assert released > 0
    mtc.release_deferred()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == baseline


test_gpu_results_are_kept_and_released_by_later_copies.pytestmark = gpu_mark()
