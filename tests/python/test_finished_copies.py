"""The remains of dropped finished handles kept to die inside the next get()
(src/python/csrc/finished_copies.h, behind mtc._C._set_keep_finished, off by default): what is
kept, when it is released, the bound, and turning it off.

What a finished handle holds includes a reference to each tensor of its input, so a weak
reference to an input tensor that nothing else holds tells whether a dropped handle's remains are
still kept. The CPU target needs no GPU.
"""

import weakref

import pytest
import torch

import mtc
from support import gpu_mark, run_python


@pytest.fixture
def keep_finished():
    previous = mtc._C._set_keep_finished(True)
    mtc.release_deferred()
    yield
    mtc._C._set_keep_finished(previous)
    mtc.release_deferred()


def dropped_copy():
    """A copy of a structure whose tensors nothing else holds, its handle and result dropped once
    it finished: a weak reference to one of its tensors."""
    probe = torch.arange(4)
    handle = mtc.start_copy([probe, {"key": "value", "t": torch.ones(3)}], "cpu")
    handle.get()
    del handle
    return weakref.ref(probe)


def test_off_by_default():
    done = run_python("import mtc; print(mtc._C._set_keep_finished(False), mtc._C._kept_finished())")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "0"]


def test_off_a_dropped_handle_lets_go_at_once():
    previous = mtc._C._set_keep_finished(False)
    try:
        leaf = dropped_copy()
        assert leaf() is None
        assert mtc._C._kept_finished() == 0
    finally:
        mtc._C._set_keep_finished(previous)


def test_the_remains_die_in_the_next_get(keep_finished):
    leaf = dropped_copy()
    assert leaf() is not None and mtc._C._kept_finished() == 1
    handle = mtc.start_copy([torch.zeros(2), torch.zeros(3)], "cpu")
    assert leaf() is not None  # start_copy leaves them: its walk is the caller's critical path
    handle.get()
    assert leaf() is None and mtc._C._kept_finished() == 0


def test_a_get_releases_the_remains_of_handles_dropped_before_it(keep_finished):
    leaves = [dropped_copy() for _ in range(3)]
    assert mtc._C._kept_finished() == 1
    assert [leaf() is None for leaf in leaves] == [True, True, False]


def test_at_most_two_are_kept_the_oldest_released_first(keep_finished):
    # Three copies in flight, each dropped once it finished, with no get() between the drops.
    probes = [torch.arange(4) + i for i in range(3)]
    leaves = [weakref.ref(probe) for probe in probes]
    handles = [mtc.start_copy([probe, torch.ones(2)], "cpu") for probe in probes]
    del probes
    while not all(handle.ready() for handle in handles):
        pass
    for _ in range(3):
        del handles[0]
    assert mtc._C._kept_finished() == 2
    assert [leaf() is None for leaf in leaves] == [True, False, False]


def test_release_deferred_and_turning_it_off_release_what_is_kept(keep_finished):
    leaf = dropped_copy()
    mtc.release_deferred()
    assert leaf() is None and mtc._C._kept_finished() == 0
    leaf = dropped_copy()
    assert mtc._C._set_keep_finished(False) is True
    assert leaf() is None and mtc._C._kept_finished() == 0


def test_a_handle_dropped_before_get_is_kept_once_its_copy_finished(keep_finished):
    probe = torch.arange(4)
    leaf = weakref.ref(probe)
    handle = mtc.start_copy([probe, torch.ones(2)], "cpu")
    while not handle.ready():
        pass
    del handle, probe
    assert mtc._C._kept_finished() == 1 and leaf() is not None
    mtc.release_deferred()
    assert mtc._C._kept_finished() == 0 and leaf() is None


def test_kept_remains_die_with_the_interpreter():
    code = (
        "import torch, mtc\n"
        "mtc._C._set_keep_finished(True)\n"
        "h = mtc.start_copy([torch.arange(4), {'x': object()}], 'cpu'); h.get(); del h\n"
        "assert mtc._C._kept_finished() == 1\n"
        "print('kept')\n"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "kept"


@pytest.mark.usefixtures("keep_finished")
def test_copies_to_the_gpu_with_remains_kept_come_out_right():
    batches = [[torch.arange(8) + i, {"a": torch.ones(3) * i, "b": [torch.full((2,), i)]}]
               for i in range(4)]
    for i in range(20):
        batch = batches[i % len(batches)]
        out = mtc.start_copy(batch, "cuda").get()
        assert out[0].is_cuda and torch.equal(out[0].cpu(), batch[0])
        assert torch.equal(out[1]["a"].cpu(), batch[1]["a"])
        assert torch.equal(out[1]["b"][0].cpu(), batch[1]["b"][0])
        assert mtc._C._kept_finished() <= 1


test_copies_to_the_gpu_with_remains_kept_come_out_right.pytestmark = gpu_mark()
