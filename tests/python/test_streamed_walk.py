"""The streamed walk (src/python/csrc/handle.cpp, PyStructure::walk_into): a list, tuple or dict
root of two or more elements goes into the engine's copy element by element, the engine's workers
copying the first elements while the module walks the others. It must give what the walk of the
whole structure gives, fail the same way, and leave nothing behind when it fails part way.
"""

import collections
import sys
import textwrap

import numpy as np
import pytest
import torch

import mtc
from mtc import _C
from support import assert_copied, leaf_that_runs, run_python, streamed_walk


@pytest.fixture(params=[True, False], ids=["streamed", "whole"])
def streamed(request):
    with streamed_walk(request.param):
        yield request.param


def sample(i):
    return {"boxes": torch.rand(i % 5 + 1, 4), "ids": torch.arange(i % 3 + 1),
            "cams": [{"proj": torch.ones(3, 4) * i, "name": f"cam{i}"}, None],
            "meta": (torch.arange(3, dtype=torch.int16) + i, "text", 7)}


ROOTS = {
    "list": lambda: [sample(i) for i in range(12)],
    "tuple": lambda: tuple(sample(i) for i in range(3)),
    "dict": lambda: {f"s{i}": sample(i) for i in range(5)},
    "tensors": lambda: [torch.full((i + 1,), float(i)) for i in range(40)],
    "mixed": lambda: [torch.ones(2), "leaf", None, [], {"a": torch.zeros(1)}, (torch.ones(1),)],
    "large": lambda: [[torch.full((3,), float(k)) for k in range(64)] for _ in range(16)],
}


@pytest.mark.parametrize("root", sorted(ROOTS))
def test_each_root_kind_comes_back_as_the_walk_of_the_whole_gives_it(streamed, root):
    data = ROOTS[root]()
    out = mtc.start_copy(data, "cpu").get()
    assert_copied(out, data, "cpu")


def test_a_walk_split_among_more_threads_gives_the_same(streamed):
    data = ROOTS["large"]()
    try:
        _C._set_walk_split(1, 16)
        assert_copied(mtc.start_copy(data, "cpu").get(), data, "cpu")
        with pytest.raises(ValueError, match="must be >= 1"):
            _C._set_walk_split(256, 0)
    finally:
        _C._set_walk_split(256, 128)


def test_stats_say_how_the_engine_waited_for_a_streamed_walk(streamed):
    handle = mtc.start_copy(ROOTS["large"](), "cpu")
    handle.get()
    stats = handle.stats()
    assert stats["feed_sleeps"] >= 0
    # Streamed, the engine's walk ends after the last element arrived; walked whole, there is no feed.
    assert (stats["feed_tail_us"] > 0) == streamed
    if not streamed:
        assert stats["feed_sleeps"] == 0


def test_stats_time_a_split_walks_end_and_nothing_else():
    try:
        _C._set_walk_split(1, 16)
        handle = mtc.start_copy(ROOTS["large"](), "cpu")
        handle.get()
        split = handle.stats()
    finally:
        _C._set_walk_split(256, 128)
    # Whoever joined (the pool has a worker at least), a split walk's own thread waited, if only
    # to see that nobody else was walking; to the CPU it queued no CPU->GPU chunk.
    assert split["split_wait_us"] > 0
    assert split["split_queue_us"] == 0
    # Its threads walked leaves, which took time; staging is for a GPU target only.
    assert split["split_leaf_ns"] > 0 and split["split_join_us"] >= 0
    assert split["split_stage_us"] == 0
    handle = mtc.start_copy([torch.ones(1), torch.ones(2)], "cpu")
    handle.get()
    small = handle.stats()
    assert small["walk_threads"] == 1
    split_keys = ("split_wait_us", "split_queue_us", "split_join_us", "split_leaf_ns", "split_stage_us")
    assert all(small[key] == 0 for key in split_keys)


def test_the_setting_says_what_it_was():
    previous = _C._set_streamed_walk(False)
    try:
        assert _C._set_streamed_walk(True) is False
        assert _C._set_streamed_walk(True) is True
    finally:
        _C._set_streamed_walk(previous)


@pytest.mark.parametrize("bad_at", [0, 1, 5])
def test_a_bad_leaf_part_way_fails_with_its_place_and_leaves_the_module_usable(streamed, bad_at):
    data = [[torch.ones(2), {"x": torch.arange(3)}] for _ in range(6)]
    data[bad_at][1]["x"] = np.array(["not", "numbers"], dtype=object)
    with pytest.raises(ValueError, match=rf"data\[{bad_at}\]\[1\]\['x'\]"):
        mtc.start_copy(data, "cpu")
    good = [[torch.ones(2)] for _ in range(6)]
    assert_copied(mtc.start_copy(good, "cpu").get(), good, "cpu")


def test_python_code_that_raises_part_way_fails_the_copy_with_its_error(streamed):
    changing = collections.deque()
    changing.extend([leaf_that_runs(lambda: changing.append(1)), torch.ones(1)])
    data = [torch.ones(1), [torch.ones(2)], changing, torch.ones(3)]
    with pytest.raises(RuntimeError, match="deque mutated during iteration"):
        mtc.start_copy(data, "cpu")
    assert_copied(mtc.start_copy(data[:2], "cpu").get(), data[:2], "cpu")


def test_a_root_its_walk_empties_gives_the_elements_it_had(streamed):
    # The streamed walk walks a copy of the root: code run by the walk cannot change how many
    # elements the engine waits for. Walked whole, a list emptied part way ends there.
    data = [torch.arange(3.0), None, torch.ones(2)]
    data[1] = leaf_that_runs(data.clear)
    out = mtc.start_copy(data, "cpu").get()
    assert not data
    if streamed:
        assert len(out) == 3 and torch.equal(out[0], torch.arange(3.0)) and torch.equal(out[2], torch.ones(2))
    else:
        assert len(out) == 2


def test_copies_on_the_calling_thread_and_other_containers_are_walked_whole(streamed):
    # Neither streams (nothing would copy while this thread walks, or the root's size is not
    # fixed): both still copy.
    data = [torch.ones(2), {"a": torch.zeros(3)}]
    assert_copied(mtc.start_copy(data, "cpu", use_background_thread=False).get(), data, "cpu")
    ordered = collections.OrderedDict(a=torch.ones(1), b=[torch.ones(2)])
    assert_copied(mtc.start_copy(ordered, "cpu").get(), ordered, "cpu")


def input_counts(data):
    return [sys.getrefcount(t) for element in data for t in element if isinstance(t, torch.Tensor)]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device: torch.cuda.is_available() is False on this machine")])])
def test_the_inputs_counts_are_as_they_were_after_a_copy_and_after_a_failed_walk(streamed, device):
    # A copy to a GPU lends the tensors it packs to the engine without a reference: whether the
    # walk ends or fails part way, each is given back exactly once.
    data = [[torch.full((3,), float(k)) for k in range(8)] for _ in range(6)]
    before = input_counts(data)
    handle = mtc.start_copy(data, device)
    assert_copied(handle.get(), data, "cuda:0" if device == "cuda" else device)
    del handle
    mtc.release_deferred()
    assert input_counts(data) == before
    data[4].append(np.array(["not", "numbers"], dtype=object))
    with pytest.raises(ValueError, match=r"data\[4\]\[8\]"):
        mtc.start_copy(data, device)
    assert input_counts(data) == before


def test_a_get_called_from_code_the_walk_runs_neither_deadlocks_nor_loses_the_copy():
    # Python code in the walk calls get() on another copy, which helps with the pool's queued
    # work: it may pop the streamed copy's own task or its walk's helpers, which wait for
    # elements only this thread can put. Workers that never spin leave those tasks queued.
    code = textwrap.dedent("""
        import torch, mtc

        class Meta(type):
            @property
            def _fields(cls):  # asked by the walk: is the leaf a named tuple?
                mtc.start_copy([torch.ones(2) for _ in range(300)], "cpu").get()
                return ("a",)

        class Leaf(tuple, metaclass=Meta):
            pass

        for i in range(20):
            data = [[torch.full((3,), float(k)) for k in range(64)] for _ in range(16)]
            data[0].append(Leaf())
            data[8].append(Leaf())
            handle = mtc.start_copy(data, "cpu")
            if i % 2:  # the other half drops the handle without get()
                out = handle.get()
                assert len(out) == 16 and out[8][-1] is data[8][-1]
                assert torch.equal(out[3][5], data[3][5])
            del handle
        print("ok")
    """)
    result = run_python(code, MTC_WORKER_SPIN_US="0", MTC_WORKER_ANTICIPATE="0")
    assert result.returncode == 0 and result.stdout.split() == ["ok"], result.stderr


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: torch.cuda.is_available() is False on this machine")
def test_to_a_gpu_with_reuse_streamed_and_whole_give_the_same(streamed):
    previous = (mtc.set_deferred_release(True), mtc.set_output_reuse(True))
    try:
        out = None
        for i in range(4):
            data = [sample(i + k) for k in range(16)]
            handle = mtc.start_copy(data, "cuda")
            out = handle.get()
            assert_copied(out, data, "cuda:0")
            if i >= 2:
                assert handle.stats()["recycled"] > 0
        # A structure of another shape after these: offers by position that do not fit.
        data = [sample(k) for k in range(3)] + [torch.ones(5)]
        assert_copied(mtc.start_copy(data, "cuda").get(), data, "cuda:0")
    finally:
        mtc.release_deferred()
        mtc.set_deferred_release(previous[0])
        mtc.set_output_reuse(previous[1])
