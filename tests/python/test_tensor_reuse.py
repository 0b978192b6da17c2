"""The reuse of dropped results' tensor objects for new results (src/python/csrc/tensor_reuse.h):
which objects become spares, what a reused object carries, and turning it off.

A copy to the CPU returns CPU tensors as they are, so on a machine without a GPU the engine makes
no new tensors: `_C._copy_by_clone` runs what a get() does around a copy (the release of dropped
results, each output's object, the keeping of the new ones) with clone() standing in for the
engine. The GPU tests go through start_copy itself.
"""

import gc
import weakref

import pytest
import torch

import mtc
from mtc import _C
from support import assert_switch_from_environment, gpu_mark

SPARE_LIMIT = 8192  # SpareTensors::kMaxSpares


@pytest.fixture(autouse=True)
def reuse_on():
    previous = (mtc.set_deferred_release(True), mtc.set_tensor_reuse(True))
    mtc.release_deferred()
    yield
    mtc.release_deferred()
    mtc.set_deferred_release(previous[0])
    mtc.set_tensor_reuse(previous[1])


def batch(count=20, dtype=torch.float32):
    return [torch.arange(4, dtype=dtype) + i for i in range(count)]


def reused():
    return mtc.deferred_release_stats()["reused"]


def copy_twice_dropping_the_first(first, second=None, touch=lambda out: None):
    """Copies `first`, lets `touch` do what it does to the result, drops it, copies `second` (or
    `first` again); returns the second result and how many of its objects were spares."""
    out = _C._copy_by_clone(first)
    touch(out)
    del out
    before = reused()
    out = _C._copy_by_clone(first if second is None else second)
    return out, reused() - before


def test_a_dropped_results_objects_become_the_next_results():
    out = _C._copy_by_clone(batch())
    ids = {id(t) for t in out}
    del out
    out = _C._copy_by_clone(batch())
    assert {id(t) for t in out} == ids
    assert mtc.deferred_release_stats()["spares"] == 0
    for t, expected in zip(out, batch()):
        assert torch.equal(t, expected)
        assert (t._version, t.requires_grad, t.grad, t.grad_fn, t.is_leaf) == (0, False, None, None, True)


def test_a_reused_object_takes_its_outputs_dtype_sizes_strides_and_offset():
    base = torch.arange(60, dtype=torch.int64).reshape(3, 4, 5)
    second = [base.transpose(0, 2), base[1:, ::2].double(), torch.tensor(7), torch.empty(0, 3)] * 5
    out, count = copy_twice_dropping_the_first(batch(), second)
    assert count == 20
    for t, s in zip(out, second):
        clone = s.clone()
        assert (t.dtype, t.shape, t.stride(), t.storage_offset()) == (clone.dtype, clone.shape, clone.stride(),
                                                                         clone.storage_offset())
        assert t.is_contiguous() == clone.is_contiguous() and torch.equal(t, s)


def test_a_reused_object_starts_a_version_counter_of_its_own():
    # A detached alias shares the dropped tensor's counter and memory; the reused object must share
    # neither.
    aliases = []
    out, count = copy_twice_dropping_the_first(batch(), touch=lambda out: aliases.append(out[0].detach()))
    assert count == 20
    alias_version = aliases[0]._version
    out[0].add_(1)
    assert out[0]._version == 1 and aliases[0]._version == alias_version
    assert torch.equal(aliases[0], batch()[0])


@pytest.mark.parametrize("touch", [
    pytest.param(lambda t, kept: kept.append(t), id="still held"),
    pytest.param(lambda t, kept: kept.append(weakref.ref(t)), id="weakly referenced"),
    pytest.param(lambda t, kept: setattr(t, "note", 1), id="an attribute"),
    pytest.param(lambda t, kept: t.requires_grad_(), id="asked for a gradient"),
    pytest.param(lambda t, kept: t.requires_grad_().requires_grad_(False), id="asked for a gradient once"),
    pytest.param(lambda t, kept: kept.append(t[1:]), id="a view of it held"),
    pytest.param(lambda t, kept: t.rename_("x"), id="named"),
])
@pytest.mark.filterwarnings("ignore:Named tensors")
def test_an_object_the_program_may_still_see_or_that_carries_state_is_not_reused(touch):
    # Not the first tensor: a result whose first tensor the program still holds is not released.
    kept = []
    out, count = copy_twice_dropping_the_first(batch(), touch=lambda out: touch(out[1], kept))
    assert count == 19
    gc.collect()
    if kept and isinstance(kept[0], torch.Tensor):
        assert torch.equal(kept[0], batch()[1][-kept[0].numel():])  # its memory untouched
        assert all(kept[0] is not t for t in out)


def test_inference_outputs_take_only_inference_spares():
    with torch.inference_mode():
        out, count = copy_twice_dropping_the_first(batch())
        assert count == 20 and all(t.is_inference() for t in out)
    del out
    before = reused()
    out = _C._copy_by_clone(batch())  # the inference result's objects become spares, unused
    assert reused() == before and not any(t.is_inference() for t in out)
    assert mtc.deferred_release_stats()["spares"] == 20


def test_at_most_the_limit_of_spares_is_kept():
    many = [torch.zeros(1) for _ in range(SPARE_LIMIT + 100)]
    out = _C._copy_by_clone(many)
    del out
    out = _C._copy_by_clone(batch())  # its release makes the spares
    stats = mtc.deferred_release_stats()
    assert stats["spares"] == SPARE_LIMIT - 20


def test_turning_it_off_releases_the_spares_and_reuses_nothing_more():
    out, _ = copy_twice_dropping_the_first(batch(40))
    del out
    _C._copy_by_clone(batch())
    assert mtc.deferred_release_stats()["spares"] > 0
    assert mtc.set_tensor_reuse(False) is True
    assert mtc.deferred_release_stats()["spares"] == 0 and mtc.deferred_release_stats()["reuse"] is False
    out, count = copy_twice_dropping_the_first(batch())
    assert count == 0 and mtc.deferred_release_stats()["spares"] == 0
    assert mtc.set_tensor_reuse(True) is False


def test_a_release_releases_the_spares_too():
    out = _C._copy_by_clone(batch(30))
    del out
    _C._copy_by_clone(batch())  # 30 spares made, 20 of them reused
    stats = mtc.deferred_release_stats()
    assert (stats["spares"], stats["tensors"]) == (10, 20)
    assert mtc.release_deferred() == 30
    assert mtc.deferred_release_stats()["spares"] == 0


def test_the_deferred_release_off_makes_no_spares():
    mtc.set_deferred_release(False)
    out, count = copy_twice_dropping_the_first(batch())
    assert count == 0 and mtc.deferred_release_stats()["spares"] == 0


def test_the_environment_turns_it_off_and_a_bad_value_is_named():
    assert_switch_from_environment("MTC_REUSE_TENSORS", "reuse")


def gpu_copy(data, device, **options):
    handle = mtc.start_copy(data, device, **options)
    return handle.get()


def test_gpu_results_reuse_dropped_objects_and_give_their_memory_back():
    data = [torch.full((64,), float(i)) for i in range(64)]
    gpu_copy(data, "cuda")  # what the engine sets up once for the device is not counted below
    mtc.release_deferred()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    for _ in range(4):  # spares from the second on
        out = gpu_copy(data, "cuda")
        assert all(torch.equal(o.cpu(), d) for o, d in zip(out, data))
        del out
    assert reused() >= 64 * 2
    mtc.release_deferred()
    assert torch.cuda.memory_allocated() == before


def test_gpu_to_cpu_results_reuse_dropped_objects():
    data = [torch.full((16,), float(i), device="cuda") for i in range(32)]
    for pinned in (False, True, False):
        start = reused()
        for _ in range(3):
            out = gpu_copy(data, "cpu", pinned_host_outputs=pinned)
            assert all(o.device.type == "cpu" for o in out)
            assert all(torch.equal(o, d.cpu()) for o, d in zip(out, data))
            del out
        assert reused() - start >= 32


for _test in (test_gpu_results_reuse_dropped_objects_and_give_their_memory_back,
              test_gpu_to_cpu_results_reuse_dropped_objects):
    _test.pytestmark = gpu_mark()
