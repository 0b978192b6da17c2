"""Dropped results' tensor objects coming back as a later copy's outputs (mtc._deferred says when;
src/python/csrc/deferred_release.cpp and the engine's ReusableOutputs say how). Only copies to a
GPU pack, so only they reuse: every test here is skipped, saying why, without one."""

import weakref

import pytest
import torch

import mtc
from support import assert_copied, gpu_mark

pytestmark = gpu_mark()


@pytest.fixture(autouse=True)
def reuse_on():
    previous = (mtc.set_deferred_release(True), mtc.set_output_reuse(True))
    mtc.release_deferred()
    yield
    mtc.release_deferred()
    mtc.set_deferred_release(previous[0])
    mtc.set_output_reuse(previous[1])


def batch(seed, grow=0):
    """48 small tensors of several dtypes, in dicts in a list; `grow` changes every size."""
    g = torch.Generator().manual_seed(seed)
    return [{"boxes": torch.rand(i % 5 + 1 + grow, 4, generator=g),
             "ids": torch.randint(0, 9, (i % 3 + 1 + grow,), generator=g),
             "mask": torch.rand(i % 4 + 1 + grow, generator=g) < 0.5}
            for i in range(16)]


def tensors(structure):
    return [t for element in structure for t in element.values()]


def copy(data):
    handle = mtc.start_copy(data, "cuda")
    return handle.get(), handle.stats()


def test_a_loop_gets_the_tensor_objects_of_the_result_before_last():
    ids = []
    out = None
    for i in range(5):
        data = batch(i, grow=i % 2)
        out, stats = copy(data)  # the previous result is still bound to `out` during the copy
        assert_copied(out, data, "cuda:0")
        assert all(t._version == 0 for t in tensors(out))
        ids.append({id(t) for t in tensors(out)})
        if i >= 2:
            assert stats["recycled"] == 48
            assert ids[i] == ids[i - 2]
    assert mtc.deferred_release_stats()["reuse"] is True


def test_a_result_dropped_before_the_copy_is_reused_by_it():
    out, _ = copy(batch(0))
    first = {id(t) for t in tensors(out)}
    out = None
    data = batch(1, grow=1)
    out, stats = copy(data)
    assert stats["recycled"] == 48 and {id(t) for t in tensors(out)} == first
    assert_copied(out, data, "cuda:0")


def test_tensors_the_program_can_still_reach_are_never_reused():
    out, _ = copy(batch(0))
    # Not the result's first tensor: while the program holds that, the result counts as not
    # dropped, and none of its tensors is offered.
    held = out[5]["ids"]
    ref = weakref.ref(out[1]["boxes"])
    out[2]["boxes"].note = "mine"
    out[3]["boxes"].requires_grad_()
    view = out[4]["boxes"][1:]
    before = [held.cpu().clone(), view.cpu().clone()]
    out = None
    data = batch(1)
    out, stats = copy(data)
    assert_copied(out, data, "cuda:0")
    assert stats["recycled"] == 48 - 5
    outs = tensors(out)
    assert not any(t is held or t is ref() or t is view._base for t in outs)
    assert not any(hasattr(t, "note") or t.requires_grad for t in outs)
    assert torch.equal(held.cpu(), before[0]) and torch.equal(view.cpu(), before[1])


def test_turned_off_nothing_is_reused():
    assert mtc.set_output_reuse(False) is True
    copy(batch(0))
    data = batch(1)
    out, stats = copy(data)  # the first result was dropped before it
    assert stats["recycled"] == 0 and stats["module"]["released_tensors"] == 48
    assert_copied(out, data, "cuda:0")
    assert mtc.deferred_release_stats()["reuse"] is False


def test_inference_outputs_are_reused_inside_inference_mode_only():
    with torch.inference_mode():
        out, _ = copy(batch(0))
        out = None
        data = batch(1)
        out, stats = copy(data)
        assert stats["recycled"] == 48 and all(t.is_inference() for t in tensors(out))
        assert_copied(out, data, "cuda:0")
    out = None
    data = batch(2)
    out, stats = copy(data)
    assert stats["recycled"] == 0 and not any(t.is_inference() for t in tensors(out))
    assert_copied(out, data, "cuda:0")


def test_another_structure_reuses_what_matches_leaf_by_leaf():
    out, _ = copy(batch(0))
    out = None
    # The same dtypes in another order: only leaves whose dtype matches the old leaf's reuse it.
    data = [{"mask": e["mask"], "ids": e["ids"], "boxes": e["boxes"]} for e in batch(1)]
    out, stats = copy(data)
    assert_copied(out, data, "cuda:0")
    assert stats["recycled"] == 16  # the ids


def test_a_result_built_ahead_is_rebuilt_when_the_engine_declines_an_object():
    out, _ = copy(batch(0))
    # Offered with the others (nothing on the Python side tells), declined by the engine: its
    # TensorImpl has autograd metadata. The result built ahead with it is dropped.
    out[0]["boxes"].requires_grad_()
    out = None
    data = batch(1)
    out, stats = copy(data)
    assert stats["recycled"] == 47
    assert_copied(out, data, "cuda:0")
    assert not any(t.requires_grad for t in tensors(out))
