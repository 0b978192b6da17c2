"""The deferred release holding kept results' root containers (mtc._C._set_container_deferral,
src/python/csrc/deferred_release.h): a dropped result's containers are torn down in the next get(),
its tensors released, or reused, one copy later.

On a machine without a GPU numpy arrays become new tensors on the CPU target, so their results are
kept; the reuse itself needs a GPU (the last tests)."""

import sys
import weakref

import numpy as np
import pytest
import torch

import mtc
from support import gpu_mark, printed_by


@pytest.fixture(autouse=True)
def containers_kept():
    previous = (mtc.set_deferred_release(True), mtc.set_output_reuse(True),
                mtc._C._set_container_deferral(True))
    mtc.release_deferred()
    yield
    mtc.release_deferred()
    mtc.set_deferred_release(previous[0])
    mtc.set_output_reuse(previous[1])
    mtc._C._set_container_deferral(previous[2])


class Marker:
    """An opaque leaf: every container of a result that holds it counts one reference."""


def batch(marker, count=20, make=np.arange):
    """Numpy arrays (new tensors on the CPU target, so their results are kept) or, with
    make=torch.arange, tensors."""
    return [{"values": make(4, dtype=DTYPES[make]) + i, "marker": marker} for i in range(count)]


DTYPES = {np.arange: np.int32, torch.arange: torch.int32}


def check(out, data, device):
    assert len(out) == len(data)
    for o, d in zip(out, data):
        assert list(o) == ["values", "marker"] and o["marker"] is d["marker"]
        assert o["values"].device == torch.device(device)
        assert torch.equal(o["values"].cpu(), torch.as_tensor(d["values"]))


def on_gpu(test):
    for mark in gpu_mark():
        test = mark(test)
    return test


def tensors(out):
    return [element["values"] for element in out]


def copy(data, device="cpu"):
    handle = mtc.start_copy(data, device)
    return handle.get(), handle.stats()["module"]


def alive(refs):
    return sum(r() is not None for r in refs)


def test_a_dropped_results_containers_die_in_the_next_get_its_tensors_in_the_one_after():
    marker = Marker()
    data = batch(marker)
    base = sys.getrefcount(marker)
    out, _ = copy(data)
    refs = [weakref.ref(t) for t in tensors(out)]
    assert sys.getrefcount(marker) == base + 20  # one reference from each of the result's dicts
    assert mtc.deferred_release_stats()["containers"] == 1
    del out
    assert sys.getrefcount(marker) == base + 20  # the module holds the result's list
    out2, module = copy(data)  # tears the first result's containers down
    assert module["released_tensors"] == 0
    assert sys.getrefcount(marker) == base + 20  # the second result's dicts now
    assert alive(refs) == 20  # kept, for a later copy to reuse
    stats = mtc.deferred_release_stats()
    assert (stats["results"], stats["containers"], stats["tensors"]) == (2, 1, 40)
    del out2
    out3, module = copy(data)
    assert module["released_tensors"] == 20 and alive(refs) == 0
    check(out3, data, "cpu")


def test_a_result_still_bound_keeps_its_containers():
    marker = Marker()
    data = batch(marker)
    base = sys.getrefcount(marker)
    out, _ = copy(data)
    first = out
    for _ in range(3):
        out, _ = copy(data)
    assert first[0]["marker"] is marker and all(t.shape == (4,) for t in tensors(first))
    # `first` and the two newest results hold their dicts; the one before was torn down.
    assert sys.getrefcount(marker) == base + 3 * 20
    stats = mtc.deferred_release_stats()
    assert stats["results"] == 3 and stats["containers"] == 2


def test_an_inner_container_the_program_keeps_lives_on():
    out, _ = copy(batch(Marker()))
    inner = out[3]
    expected = inner["values"].clone()
    del out
    copy(batch(Marker()))
    copy(batch(Marker()))  # the kept result's tensors released
    references = sys.getrefcount(inner["values"])  # its dict's and the call's argument
    assert references == 2 and inner["values"].equal(expected)


def test_release_deferred_drops_the_held_containers_and_turning_it_off_keeps_the_rule():
    marker = Marker()
    data = batch(marker)
    base = sys.getrefcount(marker)
    out, _ = copy(data)
    del out
    assert mtc.release_deferred() == 20
    assert sys.getrefcount(marker) == base
    assert mtc.deferred_release_stats()["containers"] == 0
    out, _ = copy(data)
    assert mtc._C._set_container_deferral(False) is True
    del out
    out, _ = copy(data)  # the root held before the switch is torn down as before
    assert sys.getrefcount(marker) == base + 20  # only the new result's dicts
    assert mtc.deferred_release_stats()["containers"] == 0


def test_a_release_that_gets_the_handle_being_got_returns_its_result():
    # As test_deferred_release.py's test of the same name, the tensors released a copy later. In
    # a child, so that a hang fails.
    code = (
        "import weakref, numpy as np, mtc\n"
        "arrays = [np.arange(4) + i for i in range(20)]\n"
        "out = mtc.start_copy(arrays, 'cpu').get()\n"
        "tensor = out[0]\n"
        "del out\n"
        "mtc.start_copy(arrays, 'cpu').get()\n"  # tears the dropped result's list down
        "handle = mtc.start_copy(arrays, 'cpu')\n"
        "while not handle.ready():\n"
        "    pass\n"
        "inner = []\n"
        "weakref.finalize(tensor, lambda: inner.append(handle.get()))\n"
        "del tensor\n"
        "result = handle.get()\n"
        "print(len(inner), inner[0] is result, handle.stats()['module']['released_tensors'])\n"
    )
    assert printed_by(code) == ["1", "True", "40"]


def test_a_root_tensor_holds_no_container():
    out, _ = copy(np.arange(64, dtype=np.int32))
    assert mtc.deferred_release_stats()["containers"] == 0


@on_gpu
@pytest.mark.parametrize("drop_first", [True, False])
def test_a_loop_reuses_the_tensor_objects_one_copy_later(drop_first):
    ids = []
    out = None
    for i in range(6):
        data = batch(Marker(), make=torch.arange)
        if drop_first:
            out = None  # a step that frees its batch before the copy
        out, stats = copy(data, "cuda")
        check(out, data, "cuda:0")
        ids.append({id(t) for t in tensors(out)})
        # Freed first, a result's tensors come back two copies later; still bound during the
        # next copy, three.
        back = 2 if drop_first else 3
        if i >= back:
            assert ids[i] == ids[i - back]
