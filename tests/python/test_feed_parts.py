"""Root elements fed to the engine in parts (mtc._C._set_feed_parts, PyStructure::walk_into): each
root element of a streamed walk becomes several entries of the engine's copy, its tensors shared
out in order, so that the engine's threads can share a large element. The result must be what one
entry per element gives, whatever the element holds: many tensors, fewer tensors than parts, a
tensor alone, or none.
"""

import pytest
import torch

import mtc
from mtc import _C
from support import assert_copied, gpu_mark, streamed_walk
from test_streamed_walk import ROOTS


@pytest.fixture(params=[2, 3, 7])
def parts(request):
    previous = _C._set_feed_parts(request.param)
    try:
        with streamed_walk(True):
            yield request.param
    finally:
        _C._set_feed_parts(previous)


@pytest.mark.parametrize("root", sorted(ROOTS))
def test_each_root_kind_comes_back_whole_in_parts(parts, root):
    data = ROOTS[root]()
    assert_copied(mtc.start_copy(data, "cpu").get(), data, "cpu")


def test_the_engine_gets_every_part(parts):
    data = ROOTS["large"]()
    handle = mtc.start_copy(data, "cpu")
    handle.get()
    # Every part arrived: the engine waited for the last of 16 x parts entries, then finished.
    assert handle.stats()["feed_tail_us"] > 0
    assert handle.stats()["tensors"] == 16 * 64


@pytest.mark.parametrize("root", sorted(ROOTS))
@pytest.mark.usefixtures("parts")
def test_copies_to_the_gpu_in_parts_reuse_and_come_back_whole(root):
    data = ROOTS[root]()
    # Dropped results' tensor objects are offered by position to the next copy, part by part.
    for _ in range(3):
        out = mtc.start_copy(data, "cuda").get()
        assert_copied(out, data, "cuda")
        del out


for _mark in gpu_mark():
    test_copies_to_the_gpu_in_parts_reuse_and_come_back_whole = _mark(
        test_copies_to_the_gpu_in_parts_reuse_and_come_back_whole)


def test_the_setting_says_what_it_was_and_refuses_nonsense():
    previous = _C._set_feed_parts(4)
    try:
        assert _C._set_feed_parts(2) == 4
        for bad in (0, -1, 65):
            with pytest.raises(ValueError, match="feed parts must be 1 to 64"):
                _C._set_feed_parts(bad)
        assert _C._set_feed_parts(1) == 2
    finally:
        _C._set_feed_parts(previous)
