"""The recycling of dropped results' tensor objects (src/python/csrc/tensor_recycling.h): a get()
gives the objects that nothing else can reach to its new tensors, with the new tensors' data,
dtype, shape, strides and version counter; objects the program can still reach in any way are
released as before; unused spares die when get() returns.

On a machine without a GPU the engine's CPU target returns tensors as they are; numpy arrays
become new tensors there, so their results are the ones recycled. The GPU test copies to the GPU.
"""

import sys
import weakref

import numpy as np
import pytest
import torch

import mtc
from support import gpu_batch_and_memory, gpu_mark


@pytest.fixture(autouse=True)
def recycling_on():
    previous = (mtc.set_deferred_release(True), mtc.set_tensor_recycling(True))
    mtc.release_deferred()
    yield
    mtc.release_deferred()
    mtc.set_deferred_release(previous[0])
    mtc.set_tensor_recycling(previous[1])


def arrays(count, first=0, dtype=np.int32, shape=(4,)):
    size = int(np.prod(shape))
    return [(np.arange(size, dtype=dtype) + first + i).reshape(shape) for i in range(count)]


def copy(data, device="cpu"):
    handle = mtc.start_copy(data, device)
    return handle.get(), handle.stats()["module"]


def same_as_arrays(tensors, batch):
    return all(torch.equal(t.cpu(), torch.from_numpy(a)) for t, a in zip(tensors, batch))


def test_a_dropped_results_objects_hold_the_next_results_tensors():
    out, _ = copy(arrays(20))
    ids = [id(t) for t in out]
    del out
    batch = arrays(20, first=100)
    out, module = copy(batch)
    assert [id(t) for t in out] == ids  # the objects lived on: their ids cannot have been reused
    assert module["recycled_tensors"] == 20 and module["released_tensors"] == 0
    assert same_as_arrays(out, batch)
    assert all(t._version == 0 and not t.requires_grad and t.grad_fn is None for t in out)
    assert mtc.deferred_release_stats()["tensors"] == 20  # the new result, kept in turn


def test_a_loop_that_rebinds_its_result_recycles_the_one_before_the_last():
    # `out = start_copy(...).get()`: the previous result is still bound while get() runs.
    sets = []
    for k in range(6):
        batch = arrays(20, first=k)
        out, module = copy(batch)
        assert same_as_arrays(out, batch)
        sets.append([id(t) for t in out])
        assert module["recycled_tensors"] == (20 if k >= 2 else 0)
    assert sets[2] == sets[0] and sets[4] == sets[2] and sets[5] == sets[3]


def test_a_recycled_object_takes_on_the_new_dtype_shape_strides_and_offset():
    out, _ = copy(arrays(20))
    del out
    batch = [np.arange(6, dtype=np.float64).reshape(2, 3).T + i for i in range(20)]  # not contiguous
    out, module = copy(batch)
    assert module["recycled_tensors"] == 20
    for t, a in zip(out, batch):
        expected = torch.from_numpy(a)
        assert t.dtype == torch.float64 and t.shape == (3, 2) and t.stride() == expected.stride()
        assert t.storage_offset() == expected.storage_offset() and not t.is_contiguous()
        assert torch.equal(t, expected)


def test_an_in_place_change_of_a_dropped_tensor_does_not_carry_over():
    out, _ = copy(arrays(20))
    out[0].add_(1)
    assert out[0]._version == 1
    del out
    batch = arrays(20, first=7)
    out, module = copy(batch)
    assert module["recycled_tensors"] == 20
    assert out[0]._version == 0 and same_as_arrays(out, batch)


def reach_by_weak_reference(tensor, hold):
    hold.append(weakref.ref(tensor))


def reach_by_attribute(tensor, hold):
    tensor.note = "set by the program"


def reach_by_reference(tensor, hold):
    hold.append(tensor)


def reach_by_view(tensor, hold):
    hold.append(tensor[1:])  # outside inference mode a view holds its base


def reach_through_autograd(tensor, hold):
    tensor.requires_grad_()


@pytest.mark.parametrize("reach", [reach_by_weak_reference, reach_by_attribute, reach_by_reference,
                                   reach_by_view, reach_through_autograd])
def test_a_tensor_the_program_can_still_reach_is_not_recycled(reach):
    # Not the first tensor: the module reads the first to tell whether the program dropped a result.
    out, _ = copy(arrays(20, dtype=np.float32))
    old_values = out[3].clone()
    hold = []
    reach(out[3], hold)
    del out
    batch = arrays(20, first=50, dtype=np.float32)
    out, module = copy(batch)
    assert module["recycled_tensors"] == 19 and module["released_tensors"] == 1
    assert same_as_arrays(out, batch)
    assert not any(hasattr(t, "note") for t in out)
    if reach is reach_by_weak_reference:
        assert hold[0]() is None  # it died: nothing made it another tensor
    if reach is reach_by_reference:
        assert torch.equal(hold[0], old_values) and all(t is not hold[0] for t in out)
    if reach is reach_by_view:
        assert torch.equal(hold[0], old_values[1:])


def test_a_tensor_that_shares_only_the_storage_keeps_its_data_when_the_object_is_recycled():
    # detach() shares the storage and the version counter, and holds no reference to the tensor.
    out, _ = copy(arrays(20))
    old_values = out[3].clone()
    detached = out[3].detach()
    del out
    batch = arrays(20, first=9)
    out, module = copy(batch)
    assert module["recycled_tensors"] == 20
    assert torch.equal(detached, old_values) and same_as_arrays(out, batch)
    out[3].add_(1)  # the recycled object's counter is the new tensor's, not the detached one's
    assert out[3]._version == 1 and detached._version == 0


def test_spares_a_build_did_not_use_die_when_get_returns():
    out, _ = copy(arrays(20))
    del out
    out, module = copy(arrays(16))
    assert module["recycled_tensors"] == 16 and module["released_tensors"] == 4
    assert mtc.deferred_release_stats()["tensors"] == 16


def test_nothing_of_a_recycled_result_outlives_release_deferred():
    # A tensor made from a numpy array holds the array: the count of references to the arrays tells
    # whether anything (kept results, spares, the engine's tensors the spares took over) still
    # holds them.
    batch = arrays(20)
    before = [sys.getrefcount(a) for a in batch]
    for _ in range(4):
        out, _ = copy(batch)
    assert out[0].data_ptr() == batch[0].ctypes.data  # a CPU copy of an array shares its memory
    del out
    mtc.release_deferred()
    assert [sys.getrefcount(a) for a in batch] == before


def test_turned_off_every_dropped_tensor_is_released():
    assert mtc.set_tensor_recycling(False) is True
    out, _ = copy(arrays(20))
    del out
    out, module = copy(arrays(20))
    assert module["recycled_tensors"] == 0 and module["released_tensors"] == 20
    assert mtc.deferred_release_stats()["recycling"] is False
    assert mtc.set_tensor_recycling(True) is False


def test_recycled_gpu_tensors_hold_the_new_data_and_the_old_memory_goes_back():
    device = "cuda"
    batch, before = gpu_batch_and_memory()
    out, _ = copy(batch, device)
    one_result = torch.cuda.memory_allocated() - before
    ids = [id(t) for t in out]
    del out
    batch = [b + 1000 for b in batch]
    out, module = copy(batch, device)
    assert module["recycled_tensors"] == 64 and [id(t) for t in out] == ids
    assert all(t.is_cuda and torch.equal(t.cpu(), b) for t, b in zip(out, batch))
    assert torch.cuda.memory_allocated() - before == one_result  # the dropped result's is back
    del out
    mtc.release_deferred()
    assert torch.cuda.memory_allocated() == before


test_recycled_gpu_tensors_hold_the_new_data_and_the_old_memory_goes_back.pytestmark = gpu_mark()
