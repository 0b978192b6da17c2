"""The deferred release of dropped results' tensors (src/python/csrc/deferred_release.h): which
results are kept, when a get() releases them, the bounds, turning it off, and its end at exit.

On a machine without a GPU the engine's CPU target returns tensors as they are; numpy arrays
become new tensors there, so their results are what these tests keep. The GPU tests copy to the
GPU, whose outputs are all new.
"""

import gc
import sys
import time
import weakref

import numpy as np
import pytest
import torch

import mtc
from support import gpu_mark, printed_by, run_python


@pytest.fixture(autouse=True)
def deferred_release_on():
    previous = mtc.set_deferred_release(True)
    mtc.release_deferred()
    yield
    mtc.release_deferred()
    mtc.set_deferred_release(previous)


def arrays(count, elements=4):
    return [np.arange(elements, dtype=np.int32) + i for i in range(count)]


def alive(refs):
    return sum(r() is not None for r in refs)


def copy(data, device="cpu"):
    handle = mtc.start_copy(data, device)
    return handle.get(), handle.stats()["module"]


def test_a_dropped_result_dies_in_the_next_get():
    out, _ = copy(arrays(20))
    refs = [weakref.ref(t) for t in out]
    del out
    assert alive(refs) == 20
    assert mtc.deferred_release_stats() == {"enabled": True, "reuse": True, "results": 1, "tensors": 20, "bytes": 320}
    out, module = copy(arrays(20))
    assert alive(refs) == 0
    assert module["released_tensors"] == 20 and module["release_us"] > 0
    assert mtc.deferred_release_stats()["results"] == 1  # the new result


def test_a_result_still_bound_during_the_next_get_dies_in_the_one_after():
    # `out = start_copy(...).get()` in a loop: the previous result is dropped after get() returns.
    out, _ = copy(arrays(20))
    first = [weakref.ref(t) for t in out]
    out, module = copy(arrays(20))
    assert module["released_tensors"] == 0
    assert alive(first) == 20 and mtc.deferred_release_stats()["results"] == 2
    out, module = copy(arrays(20))
    assert module["released_tensors"] == 20 and alive(first) == 0
    assert mtc.deferred_release_stats()["results"] == 2


def test_at_most_two_results_are_kept():
    held = [copy(arrays(20))[0] for _ in range(4)]
    stats = mtc.deferred_release_stats()
    assert (stats["results"], stats["tensors"]) == (2, 40)
    assert all(torch.equal(t, torch.from_numpy(a)) for out in held for t, a in zip(out, arrays(20)))


def test_a_release_drops_every_kept_tensor():
    for count in (16, 17, 25, 100):
        refs = [weakref.ref(t) for t in copy(arrays(count))[0]]
        assert alive(refs) == count
        assert mtc.release_deferred() == count and alive(refs) == 0


def test_tensors_the_program_still_holds_outlive_the_release():
    out, _ = copy(arrays(20))
    kept = out[3]
    del out
    assert mtc.release_deferred() == 20
    gc.collect()
    assert torch.equal(kept, torch.arange(4, dtype=torch.int32) + 3)


def test_results_of_few_tensors_or_more_than_16_mib_are_not_kept():
    refs = [weakref.ref(t) for t in copy(arrays(15))[0]]
    assert alive(refs) == 0
    refs = [weakref.ref(t) for t in copy(arrays(16, elements=(1 << 20) // 4 + 1))[0]]  # 16 MiB + 64 B
    assert alive(refs) == 0
    assert mtc.deferred_release_stats()["results"] == 0


def test_leaves_already_on_the_target_are_not_kept():
    data = [torch.arange(4) for _ in range(20)]
    out, _ = copy(data)
    assert all(o is d for o, d in zip(out, data))
    assert mtc.deferred_release_stats()["results"] == 0


def test_turning_it_off_releases_what_is_kept_and_keeps_nothing_more():
    out, _ = copy(arrays(20))
    refs = [weakref.ref(t) for t in out]
    del out
    assert mtc.set_deferred_release(False) is True
    assert alive(refs) == 0
    refs = [weakref.ref(t) for t in copy(arrays(20))[0]]
    assert alive(refs) == 0
    assert mtc.deferred_release_stats() == {"enabled": False, "reuse": True, "results": 0, "tensors": 0, "bytes": 0}
    assert mtc.set_deferred_release(True) is False


def test_a_release_that_runs_a_copy_keeps_the_counts():
    # A weak reference's callback runs when the tensor dies, inside the next get(); it copies too.
    out, _ = copy(arrays(20))
    inner = []
    weakref.finalize(out[0], lambda: inner.append(copy(arrays(20))[0]))
    del out
    out, module = copy(arrays(20))
    assert module["released_tensors"] == 20 and len(inner) == 1
    assert all(torch.equal(t, torch.from_numpy(a)) for t, a in zip(inner[0] + out, arrays(20) * 2))
    assert mtc.deferred_release_stats()["results"] <= 2


def test_a_release_that_gets_the_handle_being_got_returns_its_result():
    # The release runs before get() takes its lock: a callback that calls get() on the same
    # handle must neither hang nor build the result twice, also when the copy is complete (get()
    # then keeps the GIL). In a child, so that a hang fails.
    code = (
        "import weakref, numpy as np, mtc\n"
        "arrays = [np.arange(4) + i for i in range(20)]\n"
        "out = mtc.start_copy(arrays, 'cpu').get()\n"
        "handle = mtc.start_copy(arrays, 'cpu')\n"
        "while not handle.ready():\n"
        "    pass\n"
        "inner = []\n"
        "weakref.finalize(out[0], lambda: inner.append(handle.get()))\n"
        "del out\n"
        "result = handle.get()\n"
        "print(len(inner), inner[0] is result, handle.stats()['module']['released_tensors'])\n"
    )
    assert printed_by(code) == ["1", "True", "20"]


def test_the_environment_turns_it_off_and_a_bad_value_is_named():
    code = "import mtc; print(mtc.deferred_release_stats()['enabled'])"
    assert run_python(code, MTC_DEFER_RELEASE="0").stdout.strip() == "False"
    assert run_python(code, MTC_DEFER_RELEASE="1").stdout.strip() == "True"
    result = run_python(code, MTC_DEFER_RELEASE="yes")
    assert result.returncode != 0
    assert "MTC_DEFER_RELEASE must be 0 or 1, not 'yes'" in result.stderr


def test_kept_tensors_die_before_the_interpreter_ends():
    # The weak reference's callback runs at mtc's exit hook, while Python still works.
    code = (
        "import weakref, numpy as np, mtc\n"
        "out = mtc.start_copy([np.zeros(4) for _ in range(20)], 'cpu').get()\n"
        "weakref.finalize(out[0], print, 'released')\n"
        "del out\n"
        "print('kept', mtc.deferred_release_stats()['tensors'])\n"
    )
    assert printed_by(code) == ["kept", "20", "released"]


def copy_run_by_a_worker(data, device):
    """copy(), its result taken only once the copy is ready, so that a pool worker, not this
    thread, runs the engine's job: the worker then leaves device memory for the next copy's chunks
    (mtc/copier.h), the same for every copy of this batch."""
    handle = mtc.start_copy(data, device)
    deadline = time.monotonic() + 10
    while not handle.ready() and time.monotonic() < deadline:
        time.sleep(0.0001)
    return handle.get(), handle.stats()["module"]


def settled_memory_allocated():
    """torch's allocated device memory once it stops moving: after a copy to a GPU, a worker
    replaces the device memory the engine keeps for the next copy's chunks."""
    deadline = time.monotonic() + 2
    seen = torch.cuda.memory_allocated()
    while time.monotonic() < deadline:
        time.sleep(0.02)
        now = torch.cuda.memory_allocated()
        if now == seen:
            return now
        seen = now
    return seen


def test_a_dropped_gpu_result_gives_its_memory_back_in_the_next_get():
    device = "cuda"
    batch = [torch.full((64,), float(i)) for i in range(64)]
    # Whatever the engine sets up once for the device, and keeps for the next copy, is not counted
    # below: twice, so that what it keeps is this batch's alone (not what earlier copies asked for).
    copy_run_by_a_worker(batch, device)
    copy_run_by_a_worker(batch, device)
    mtc.release_deferred()
    torch.cuda.synchronize()
    before = settled_memory_allocated()
    out, _ = copy_run_by_a_worker(batch, device)
    refs = [weakref.ref(t) for t in out]
    del out
    assert alive(refs) == 64 and settled_memory_allocated() > before
    out, module = copy_run_by_a_worker(batch, device)
    assert module["released_tensors"] == 64 and alive(refs) == 0
    assert all(torch.equal(o.cpu(), b) for o, b in zip(out, batch))
    del out
    mtc.release_deferred()
    assert settled_memory_allocated() == before


test_a_dropped_gpu_result_gives_its_memory_back_in_the_next_get.pytestmark = gpu_mark()


# The module's side of the reuse of dropped tensor objects (docs/python-output-reuse.md), through
# mtc._C._take_reusable, which asks what a copy to a GPU would ask: on a machine without one, the
# tensors made from numpy arrays are the kept results.
def test_a_dropped_result_offers_each_leafs_tensor_object_for_that_leaf():
    out, _ = copy(arrays(20))
    ids = [id(t) for t in out]
    del out
    wanted = [k % 4 != 3 for k in range(24)]
    taken = mtc._C._take_reusable(wanted)
    assert len(taken) == 24  # one entry per wanted leaf; the result had 20
    assert [id(t) if t is not None else None for t in taken] == [i if w else None for i, w in zip(ids + [None] * 4, wanted)]
    stats = mtc.deferred_release_stats()
    # The unwanted ones wait for a release; the bytes count only them.
    assert (stats["tensors"], stats["bytes"]) == (5, 5 * 16)


def test_objects_the_program_can_still_reach_are_not_offered():
    out, _ = copy(arrays(20))
    held = out[1]
    ref = weakref.ref(out[2])
    out[3].note = "mine"
    out[5].__dict__  # a dict of its own, empty: offered all the same
    view = out[4][1:]
    out = None
    taken = mtc._C._take_reusable([True] * 20)
    assert [k for k, t in enumerate(taken) if t is None] == [1, 2, 3, 4]
    assert all(t is not held and t is not ref() and t is not view._base for t in taken if t is not None)


def test_a_result_whose_first_tensor_is_held_offers_nothing():
    out, _ = copy(arrays(20))
    first = out[0]
    del out
    assert mtc._C._take_reusable([True] * 20) == []
    assert mtc.deferred_release_stats()["tensors"] == 20
    del first


def test_reuse_turned_off_offers_nothing():
    out, _ = copy(arrays(20))
    del out
    assert mtc.set_output_reuse(False) is True
    try:
        assert mtc._C._take_reusable([True] * 20) == []
    finally:
        mtc.set_output_reuse(True)


def test_offers_follow_the_leaves_past_leaves_returned_as_they_are():
    kept_tensor = torch.zeros(4)  # already on the target: comes back as itself, nothing new
    data = [kept_tensor] + arrays(20)
    out, _ = copy(data)
    assert out[0] is kept_tensor
    ids = [id(t) for t in out[1:]]
    del out
    taken = mtc._C._take_reusable([True] * 21)
    assert len(taken) == 21 and taken[0] is None
    assert [id(t) for t in taken[1:]] == ids


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="from Python 3.12 the collector runs between "
                    "bytecodes, never inside an allocation")
def test_a_finalizer_run_by_the_collector_while_objects_are_offered_finds_none_half_taken():
    # Looking at a tensor object for attributes of its own makes its dict; before Python 3.12
    # that allocation may run the collector, and a finalizer that copies asks for offers itself.
    out, _ = copy(arrays(20))
    del out
    inside = []  # the outer offer is running
    offered_inside = []

    class Cycle:
        def __del__(self):
            if inside:
                offered_inside.append(mtc._C._take_reusable([True] * 20))

    wanted = [True] * 20
    thresholds = gc.get_threshold()
    fresh_dicts = [{} for _ in range(1000)]  # no free dict left to reuse: the next ones allocate
    gc.collect()
    garbage = Cycle()
    garbage.itself = garbage
    del garbage
    gc.set_threshold(1)
    inside.append(True)
    try:
        taken = mtc._C._take_reusable(wanted)
    finally:
        inside.clear()
        gc.set_threshold(*thresholds)
    del fresh_dicts
    if not offered_inside:  # a free dict was reused after all: no allocation, no collection
        pytest.skip("the collector did not run while the objects were looked at")
    # Each object is offered once at most: the finalizer's call found the result gone, not half
    # taken (it would have been offered the same objects a second time).
    objects = [t for t in taken if t is not None] + [t for o in offered_inside for t in o if t is not None]
    assert len({id(t) for t in objects}) == len(objects) == 20
