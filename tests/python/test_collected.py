"""The handle and Python's garbage collector: a handle that only a reference cycle reaches is freed.

An opaque leaf, a dict key or the result can refer back to the handle that copies it; a cycle through
a type the collector cannot see would never be freed (each copy's structure and result kept for the
process's life).
"""

import collections
import functools
import gc
import weakref

import torch

import mtc
from support import assert_copied, gpu_mark


class Box:
    """An opaque leaf, or a dict key, that can hold a reference (a string cannot): the walk keeps it
    as it is, the result holds the same object."""


def collected(ref):
    gc.collect()  # collects whether or not automatic collection is enabled
    return ref() is None


def test_a_handle_is_tracked_and_its_referents_are_what_it_holds():
    box = Box()
    handle = mtc.start_copy([torch.ones(2), box], "cpu")
    assert gc.is_tracked(handle)
    assert any(r is box for r in gc.get_referents(handle))
    out = handle.get()
    # After get(): the result (which holds the box) in place of the structure's own reference.
    assert any(r is out for r in gc.get_referents(handle))


def test_a_cycle_through_an_opaque_leaf_is_freed_before_get():
    box = Box()
    box.handle = mtc.start_copy({"t": torch.ones(3), "box": box}, "cpu")
    ref = weakref.ref(box)
    del box
    assert collected(ref)


def test_a_cycle_through_the_result_is_freed_after_get():
    box = Box()
    handle = mtc.start_copy([torch.arange(4), [box]], "cpu")
    out = handle.get()
    assert out[1][0] is box
    box.handle = handle
    ref = weakref.ref(box)
    del box, handle, out
    assert collected(ref)


def test_a_cycle_through_a_dict_key_is_freed():
    key = Box()
    key.handle = mtc.start_copy({key: torch.ones(2), "b": torch.zeros(1)}, "cpu")
    ref = weakref.ref(key)
    del key
    assert collected(ref)


def test_a_cycle_through_a_default_factory_is_freed():
    holder = Box()
    # A partial holds `holder` itself (a lambda would hold only the variable, which `del` empties).
    data = collections.defaultdict(functools.partial(id, holder), {"t": torch.ones(2)})
    holder.handle = mtc.start_copy([data, torch.ones(1)], "cpu")
    ref = weakref.ref(holder)
    del holder, data
    assert collected(ref)


def test_a_cycle_freed_while_its_copy_runs_waits_for_it_and_later_copies_are_right():
    box = Box()
    # Long enough for the engine's workers to be walking it when the collector runs.
    box.handle = mtc.start_copy([torch.ones(2)] * 200_000 + [box], "cpu")
    ref = weakref.ref(box)
    del box
    assert collected(ref)
    data = {"a": [torch.arange(5), torch.ones(2, 3)], "b": (torch.zeros(1),)}
    assert_copied(mtc.start_copy(data, "cpu").get(), data, torch.device("cpu"))


def copy_in_cycles_to_the_gpu(in_flight):
    device = torch.device("cuda:0")
    batch = {f"k{i}": [torch.full((3,), float(i)), torch.arange(i + 1)] for i in range(64)}
    refs = []
    for _ in range(10):
        box = Box()
        handle = mtc.start_copy([batch, box], device)
        if not in_flight:
            handle.get()
        box.handle = handle
        refs.append(weakref.ref(box))
        del box, handle
        gc.collect()
        # The deferred release may offer the dropped results' tensors to the next copy: each
        # copy's result must still be its input's.
        assert_copied(mtc.start_copy(batch, device).get(), batch, device)
    assert all(r() is None for r in refs)


def test_cycles_to_the_gpu_freed_while_their_copies_run():
    copy_in_cycles_to_the_gpu(in_flight=True)


def test_cycles_to_the_gpu_freed_after_get():
    copy_in_cycles_to_the_gpu(in_flight=False)


def test_a_cycle_freed_while_the_engine_reads_tensors_only_it_holds():
    # Lent to the engine (packed CPU tensors): only the handle holds them once the input list is
    # gone. The collector must not count them as part of the garbage while the copy reads them.
    refs = []
    for _ in range(5):
        box = Box()
        tensors = [torch.full((3,), float(i)) for i in range(2000)]
        expected = [t.clone() for t in tensors]
        box.handle = mtc.start_copy(tensors + [box], "cuda")
        refs.append(weakref.ref(box))
        del box, tensors
        gc.collect()
        out = mtc.start_copy(expected, "cuda").get()
        assert_copied(out, expected, torch.device("cuda:0"))
    assert all(r() is None for r in refs)


test_cycles_to_the_gpu_freed_while_their_copies_run.pytestmark = gpu_mark()
test_a_cycle_freed_while_the_engine_reads_tensors_only_it_holds.pytestmark = gpu_mark()
test_cycles_to_the_gpu_freed_after_get.pytestmark = gpu_mark()
