"""Inputs lent to the engine: the small CPU tensors a copy to a GPU packs are handed over without
a C++ reference, their Python objects held instead (src/python/csrc/py_structure.h). Whatever
path a copy takes, every input must come out with the reference counts it went in with, stay
alive while the engine may read it, and be let go of once the handle is dropped."""

import gc
import sys
import weakref

import pytest
import torch

import mtc
from support import errors_in_threads, gpu_mark, leaf_that_runs

pytestmark = gpu_mark()


def mixed_inputs():
    """Tensors the engine packs (lent) beside ones it copies on their own (referenced)."""
    small = [torch.arange(i + 1, dtype=torch.float32) for i in range(24)]
    others = {
        "large": torch.ones(1 << 17),  # 512 KiB: more than the engine packs
        "transposed": torch.ones(8, 8).t(),  # not contiguous
        "pinned": torch.ones(16).pin_memory(),  # packed too
        "on_gpu": torch.ones(4, device="cuda"),  # already on the target: returned as it is
    }
    return small, others


def counts(tensors):
    return [(sys.getrefcount(t), t._use_count()) for t in tensors]


def test_every_input_keeps_its_reference_counts():
    small, others = mixed_inputs()
    batch = {"a": small[:8], "b": (small[8], {"c": small[9:], **others}), "again": small[0], "n": 3}
    tensors = small + list(others.values())
    before = counts(tensors)
    for _ in range(50):
        handle = mtc.start_copy(batch, "cuda")
        out = handle.get()
        assert torch.equal(out["b"][1]["c"][4].cpu(), small[13])
        assert torch.equal(out["b"][1]["transposed"].cpu(), others["transposed"])
        assert out["b"][1]["on_gpu"] is others["on_gpu"]
        del handle, out
    # Without a worker, with nothing lent (no packing), with little packed (small chunks).
    mtc.start_copy(batch, "cuda", use_background_thread=False).get()
    mtc.start_copy(batch, "cuda", pack_cpu_tensors=False).get()
    mtc.start_copy(batch, "cuda", max_packed_chunk_bytes=64).get()
    gc.collect()
    assert counts(tensors) == before


def test_a_root_tensor_and_unfinished_handles_keep_the_counts():
    small, _ = mixed_inputs()
    before = counts(small)
    assert torch.equal(mtc.start_copy(small[3], "cuda").get().cpu(), small[3])
    for _ in range(20):
        handle = mtc.start_copy({"x": small}, "cuda")
        del handle  # before get(): waits for the device work
    gc.collect()
    assert counts(small) == before


def test_failed_copies_give_their_inputs_back():
    small, _ = mixed_inputs()
    before = counts(small)
    sparse = torch.sparse_coo_tensor(torch.zeros(1, 0, dtype=torch.long), torch.zeros(0), (2,))
    with pytest.raises(RuntimeError, match="layout Sparse"):
        mtc.start_copy({"a": small[:5], "b": [small[5], sparse]}, "cuda").get()
    with pytest.raises(ValueError, match="min_packed_alignment_bytes"):  # the engine's start
        mtc.start_copy({"a": small}, "cuda", min_packed_alignment_bytes=0)
    np = pytest.importorskip("numpy", reason="numpy is not installed")
    with pytest.raises(ValueError, match=r"data\['b'\]\[1\]"):  # the walk fails after lending
        mtc.start_copy({"a": small[:5], "b": [small[5], np.array([object()], dtype=object)]}, "cuda")
    gc.collect()
    assert counts(small) == before


def test_lent_inputs_live_until_the_handle_is_dropped():
    batch = {"a": [torch.full((64,), float(i)) for i in range(6)]}
    alive = [weakref.ref(t) for t in batch["a"]]
    handle = mtc.start_copy(batch, "cuda")
    del batch
    gc.collect()
    assert all(ref() is not None for ref in alive)  # the copy may still read them
    out = handle.get()
    assert [float(t[0]) for t in out["a"]] == [float(i) for i in range(6)]
    del handle
    gc.collect()
    assert all(ref() is None for ref in alive)


def test_threads_that_copy_one_batch_at_once_keep_the_counts():
    small, others = mixed_inputs()
    batch = {"a": small, "b": others}
    tensors = small + list(others.values())
    before = counts(tensors)

    def copy_many(_):
        kept = []
        for i in range(40):
            kept.append(mtc.start_copy(batch, "cuda"))
            if i % 3 == 2:  # handles dropped out of order, some unfinished
                kept.pop(0).get()
                kept.pop()
        for handle in kept:
            assert torch.equal(handle.get()["a"][7].cpu(), small[7])

    errors = errors_in_threads(copy_many, 4)
    assert not errors, errors
    gc.collect()
    assert counts(tensors) == before


def test_inputs_that_code_run_by_the_walk_drops_are_copied_then_let_go():
    # Code run by the walk empties the containers: the tensors they alone held are lent all the
    # same, copied, and freed once the handle is gone.
    tensors = [torch.full((16,), float(i)) for i in range(5)]
    alive = [weakref.ref(t) for t in tensors]
    inner = [tensors[0]]
    inner.append(leaf_that_runs(inner.clear))
    batch = {}
    batch.update(leaf=leaf_that_runs(batch.clear), a=inner, b=tensors[1:])
    del tensors, inner
    handle = mtc.start_copy(batch, "cuda")
    gc.collect()
    assert not batch and all(ref() is not None for ref in alive)  # held by the copy
    out = handle.get()
    assert [float(t[0]) for t in [out["a"][0], *out["b"]]] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert out["a"][0].is_cuda and handle.stats()["packed"] == 5
    del handle, out, batch
    gc.collect()
    assert all(ref() is None for ref in alive)


class DeviceFromPython(torch.Tensor):
    """A wrapper subclass whose device is asked of Python, which refuses: the lending test raises."""

    @staticmethod
    def __new__(cls, elem):
        return torch.Tensor._make_wrapper_subclass(
            cls, elem.shape, dtype=elem.dtype, device=elem.device, dispatch_device=True)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"DeviceFromPython refuses {func}")


def test_a_lending_test_that_raises_gives_every_input_back():
    small, _ = mixed_inputs()
    odd = DeviceFromPython(torch.ones(2))
    tensors = small + [odd]
    before = counts(tensors)
    for _ in range(3):
        with pytest.raises(RuntimeError, match="DeviceFromPython refuses"):
            mtc.start_copy({"a": small[:6], "b": [odd, small[6]], "c": small[7:]}, "cuda")
    gc.collect()
    assert counts(tensors) == before
