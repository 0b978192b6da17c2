"""What a dropped handle of a completed copy leaves (src/python/csrc/deferred_release.h): the
module's and the engine's references to the copy's inputs, kept until the next get() within the
deferred release's bounds, and released at once outside them or when it is off.

On the CPU machine the engine's CPU target returns tensors as they are, and its job holds a
reference to each input until its handle is destroyed: what the tests watch, through weak
references to the input tensors.
"""

import weakref

import numpy as np
import pytest
import torch

import mtc
from mtc import _C
from support import alive, deferred_release_settings


@pytest.fixture(autouse=True)
def deferred_release_on():
    yield from deferred_release_settings(handles=True)


def tensors(count, elements=4):
    return [torch.arange(elements, dtype=torch.int32) + i for i in range(count)]


def copied_and_dropped(data):
    """Copies `data`, drops the result and the handle; returns weak references to its tensors
    (the caller drops `data` too) and the handle's stats."""
    handle = mtc.start_copy(data, "cpu")
    handle.get()
    stats = handle.stats()
    del handle
    return stats


def test_a_dropped_handle_keeps_its_inputs_until_the_next_get():
    data = tensors(20)
    refs = [weakref.ref(t) for t in data]
    copied_and_dropped(data)
    del data
    assert alive(refs) == 20
    assert mtc.deferred_release_stats()["handles"] == 1
    handle = mtc.start_copy(tensors(20), "cpu")
    handle.get()
    assert alive(refs) == 0
    module = handle.stats()["module"]
    assert module["released_handles"] == 1 and module["release_us"] > 0
    assert mtc.deferred_release_stats()["handles"] == 0


def test_small_copies_large_copies_and_unfinished_get_are_not_kept():
    data = tensors(15)  # fewer than 16 tensors
    refs = [weakref.ref(t) for t in data]
    copied_and_dropped(data)
    del data
    assert alive(refs) == 0
    data = [torch.zeros(1 << 20, dtype=torch.uint8) for _ in range(17)]  # 17 MiB
    refs = [weakref.ref(t) for t in data]
    copied_and_dropped(data)
    del data
    assert alive(refs) == 0
    assert mtc.deferred_release_stats()["handles"] == 0


def test_a_handle_dropped_before_get_is_kept_with_its_result():
    arrays = [np.arange(4, dtype=np.int32) + i for i in range(20)]
    handle = mtc.start_copy(arrays, "cpu")
    while not handle.ready():
        pass
    refs = [weakref.ref(a) for a in arrays]
    del handle, arrays
    assert alive(refs) == 20 and mtc.deferred_release_stats()["handles"] == 1
    assert mtc.release_deferred() == 0  # tensor references of results; the handle goes too
    assert alive(refs) == 0 and mtc.deferred_release_stats()["handles"] == 0


def test_at_most_two_handles_are_kept_the_oldest_released_first():
    # Each get() releases the handles dropped before it: three are kept at once only when they
    # are dropped with no get() between.
    batches = [tensors(20) for _ in range(3)]
    refs = [[weakref.ref(t) for t in data] for data in batches]
    first, second, third = (mtc.start_copy(data, "cpu") for data in batches)
    del batches
    for handle in (first, second, third):
        while not handle.ready():
            pass
    del handle, first
    del second
    del third
    assert [alive(r) for r in refs] == [0, 20, 20]
    assert mtc.deferred_release_stats()["handles"] == 2


def test_turning_it_off_releases_the_kept_handles_and_keeps_none():
    data = tensors(20)
    refs = [weakref.ref(t) for t in data]
    copied_and_dropped(data)
    del data
    assert _C._set_deferred_handles(False) is True
    assert alive(refs) == 0
    data = tensors(20)
    refs = [weakref.ref(t) for t in data]
    copied_and_dropped(data)
    del data
    assert alive(refs) == 0
    assert _C._set_deferred_handles(True) is False
    # The deferred release as a whole off: nothing is kept either.
    mtc.set_deferred_release(False)
    data = tensors(20)
    refs = [weakref.ref(t) for t in data]
    copied_and_dropped(data)
    del data
    assert alive(refs) == 0 and mtc.deferred_release_stats()["handles"] == 0


def test_a_release_that_drops_another_handle_keeps_it_for_the_next_get():
    # A weak reference's callback runs as an input dies, inside the next get(); it copies and
    # drops a handle of its own, which is kept while the kept ones are being released.
    data = tensors(20)
    inner = []
    weakref.finalize(data[0], lambda: inner.append(copied_and_dropped(tensors(20))))
    copied_and_dropped(data)
    del data
    handle = mtc.start_copy(tensors(20), "cpu")
    out = handle.get()
    assert len(inner) == 1 and handle.stats()["module"]["released_handles"] == 1
    assert all(torch.equal(t, e) for t, e in zip(out, tensors(20)))
    assert mtc.deferred_release_stats()["handles"] == 1  # the callback's own
