"""A finished copy's parts torn down in the next get() instead of where its handle is dropped
(src/python/csrc/finished_copies.h), when mtc._C._set_deferred_teardown(True) says so."""

import gc
import weakref

import pytest
import torch

import mtc


@pytest.fixture(autouse=True)
def deferred_teardown_on():
    previous = mtc._C._set_deferred_teardown(True)
    yield
    mtc._C._set_deferred_teardown(previous)


def inputs():
    return [torch.arange(4) + i for i in range(20)]


def test_a_dropped_handle_keeps_its_inputs_until_the_next_get():
    data = inputs()
    ref = weakref.ref(data[3])
    handle = mtc.start_copy(data, "cpu")
    out = handle.get()
    del handle, out, data
    gc.collect()
    assert ref() is not None  # the engine's job, kept for the next get(), holds it
    handle = mtc.start_copy(inputs(), "cpu")
    handle.get()
    assert ref() is None
    assert handle.stats()["module"]["teardown_us"] > 0


def test_a_release_or_turning_it_off_tears_down_at_once():
    for finish in (mtc.release_deferred, lambda: mtc._C._set_deferred_teardown(False)):
        data = inputs()
        ref = weakref.ref(data[0])
        handle = mtc.start_copy(data, "cpu")
        handle.get()
        del handle, data
        assert ref() is not None
        finish()
        assert ref() is None
        mtc._C._set_deferred_teardown(True)


def test_a_second_dropped_handle_tears_down_the_first():
    refs = []
    for _ in range(2):
        data = inputs()
        refs.append(weakref.ref(data[0]))
        handle = mtc.start_copy(data, "cpu")
        handle.get()
        del handle, data
    assert refs[0]() is None and refs[1]() is not None
    mtc.release_deferred()
    assert refs[1]() is None


def test_turned_off_a_dropped_handle_lets_go_at_once():
    assert mtc._C._set_deferred_teardown(False) is True
    data = inputs()
    ref = weakref.ref(data[0])
    handle = mtc.start_copy(data, "cpu")
    handle.get()
    del handle, data
    assert ref() is None


def test_a_failed_copy_is_torn_down_where_its_handle_is_dropped():
    data = [torch.arange(4), torch.ones(3).to_sparse()]  # the engine refuses a sparse leaf
    ref = weakref.ref(data[0])
    handle = mtc.start_copy(data, "cpu")
    with pytest.raises(RuntimeError, match="layout Sparse"):
        handle.get()
    del handle, data
    assert ref() is None
