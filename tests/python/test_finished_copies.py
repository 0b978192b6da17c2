"""A finished copy's parts torn down in the next get() instead of where its handle is dropped
(src/python/csrc/finished_copies.h). Only copies that return no leaf as it is are kept so, which
on a machine without a GPU is none: the GPU tests skip there, saying why."""

import weakref

import pytest
import torch

import mtc
from support import gpu_mark


@pytest.fixture(autouse=True)
def deferred_teardown_on():
    previous = (mtc.set_deferred_release(True), mtc._C._set_deferred_teardown(True))
    mtc.release_deferred()
    yield
    mtc.release_deferred()
    mtc.set_deferred_release(previous[0])
    mtc._C._set_deferred_teardown(previous[1])


def inputs(count=20, elements=4):
    return [torch.arange(elements) + i for i in range(count)]


def copied_and_dropped(data, device="cuda"):
    """A weak reference to data[0] once `data` was copied to `device`, the result got, and the
    handle, the result and the program's reference to `data` dropped."""
    ref = weakref.ref(data[0])
    handle = mtc.start_copy(data, device)
    handle.get()
    del handle, data
    return ref


def test_a_copy_to_the_cpu_lets_go_of_its_inputs_where_its_handle_is_dropped():
    ref = copied_and_dropped(inputs(), "cpu")  # not inside the assert: pytest would keep the list
    assert ref() is None


def test_a_failed_copy_is_torn_down_where_its_handle_is_dropped():
    data = [torch.arange(4), torch.ones(3).to_sparse()]  # the engine refuses a sparse leaf
    ref = weakref.ref(data[0])
    handle = mtc.start_copy(data, "cpu")
    with pytest.raises(RuntimeError, match="layout Sparse"):
        handle.get()
    del handle, data
    assert ref() is None


@pytest.mark.parametrize("switch", ["set_deferred_release", "_set_deferred_teardown"])
def test_the_switches_say_whether_it_is_on(switch):
    turn = getattr(mtc, switch, None) or getattr(mtc._C, switch)
    assert turn(False) is True
    assert turn(True) is False


def on_gpu(test):
    for mark in gpu_mark():
        test = mark(test)
    return test


@on_gpu
def test_a_dropped_handle_keeps_its_inputs_until_the_next_get():
    ref = copied_and_dropped(inputs())
    assert ref() is not None  # the engine's job, kept for the next get(), holds it
    handle = mtc.start_copy(inputs(), "cuda")
    handle.get()
    assert ref() is None
    assert handle.stats()["module"]["teardown_us"] > 0


@on_gpu
def test_a_second_dropped_handle_tears_down_the_first():
    first = copied_and_dropped(inputs())
    second = copied_and_dropped(inputs())
    assert first() is None and second() is not None
    mtc.release_deferred()
    assert second() is None


@on_gpu
@pytest.mark.parametrize("finish", ["release_deferred", "set_deferred_release", "_set_deferred_teardown"])
def test_a_release_or_turning_it_off_tears_down_at_once(finish):
    ref = copied_and_dropped(inputs())
    assert ref() is not None
    if finish == "release_deferred":
        mtc.release_deferred()
    else:
        (getattr(mtc, finish, None) or getattr(mtc._C, finish))(False)
    assert ref() is None


@on_gpu
def test_turned_off_a_dropped_handle_lets_go_at_once():
    mtc._C._set_deferred_teardown(False)
    ref = copied_and_dropped(inputs())
    assert ref() is None


@on_gpu
def test_copies_of_more_than_16_mib_or_with_a_leaf_already_there_are_torn_down_at_once():
    large = copied_and_dropped(inputs(2, elements=(1 << 20) + 1))  # 16 MiB + 16 B
    assert large() is None
    mixed = copied_and_dropped(inputs() + [torch.ones(2, device="cuda")])
    assert mixed() is None
