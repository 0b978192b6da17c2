"""The streamed walk split among the engine's threads (src/python/csrc/py_walk_parallel.cpp): on a
CUDA target, a root as long as the last one has its elements walked by the engine's workers too,
each right before they copy it, while the caller walks from the last element back. It must give
what the caller's own walk gives, count every reference it keeps exactly once, leave to the
caller what only Python can walk, and match offered outputs to the right leaves when the batch
changes shape.

GPU only: only tensors the engine packs for a GPU are lent, and only a walk that lends can be
split (on the CPU machine every test here is skipped, with that reason).
"""

import collections
import contextlib
import gc
import sys

import pytest
import torch

import mtc
from mtc import _C
from support import assert_copied, gpu_mark

pytestmark = gpu_mark()


@contextlib.contextmanager
def parallel_walk(enabled):
    previous = _C._set_parallel_walk(enabled)
    try:
        yield
    finally:
        _C._set_parallel_walk(previous)


def own_str(text):
    """A str object of its own (not interned, not immortal): its count moves with every reference."""
    return "".join(list(text))


KEYS = {name: own_str(name) for name in ("boxes", "ids", "active", "proj", "cams", "gt", "label")}
LABEL = own_str("a label")
BIG = 10 ** 30  # an int object of its own


def element(i, cameras=6):
    k = KEYS
    return {k["cams"]: [{k["boxes"]: torch.rand(i % 3 + 1, 4), k["ids"]: torch.arange(i % 4 + 1),
                         k["active"]: torch.ones(2, dtype=torch.bool), k["proj"]: torch.eye(3, 4) * c,
                         k["label"]: LABEL} for c in range(cameras)],
            k["gt"]: (torch.rand(5, 7), BIG, None, 2.5)}


def tensors_of(data):
    out = []
    torch.utils._pytree.tree_map(lambda x: out.append(x) if isinstance(x, torch.Tensor) else None, data)
    return out


def counts(objects):
    return [sys.getrefcount(o) for o in objects]


def copy_many(make, copies):
    """`copies` copies of make(k)'s batch, each result checked and dropped; the workers' elements
    summed over them."""
    produced = 0
    for k in range(copies):
        data = make(k)
        handle = mtc.start_copy(data, "cuda")
        out = handle.get()
        assert_copied(out, data, "cuda:0")
        produced += handle.stats()["feed_produced"]
        del handle, out
    return produced


@pytest.mark.parametrize("root", ["list", "tuple", "dict"])
def test_a_split_walk_gives_what_the_callers_walk_gives(root):
    make = {"list": lambda: [element(i) for i in range(16)],
            "tuple": lambda: tuple(element(i) for i in range(16)),
            "dict": lambda: {own_str(f"sample{i}"): element(i) for i in range(16)}}[root]
    batch = make()
    with parallel_walk(True):
        produced = copy_many(lambda k: batch, 30)
    # The first copy is the caller's alone (no last walk to go by); later ones find the workers
    # awake, which walk elements in at least some of the copies.
    assert produced > 0


def test_every_reference_the_walk_takes_is_given_back():
    batch = [element(i) for i in range(16)]
    # The same tensor object in two elements: counted twice, by two threads maybe.
    shared = torch.ones(3)
    for e in (2, 9):
        batch[e][KEYS["gt"]] = (shared, BIG, None, 2.5)
    objects = [*KEYS.values(), LABEL, BIG, *tensors_of(batch)]
    before = counts(objects)
    with parallel_walk(True):
        copy_many(lambda k: batch, 40)
    mtc.release_deferred()
    gc.collect()
    assert counts(objects) == before


def test_what_only_python_can_walk_is_left_to_the_caller():
    Pair = collections.namedtuple("Pair", "a b")

    def make(k):
        data = [element(i) for i in range(16)]
        data[3] = Pair(torch.ones(2), collections.OrderedDict(x=torch.zeros(3)))
        data[7] = {KEYS["boxes"]: collections.deque([torch.ones(4)], maxlen=3)}
        data[11] = [torch.ones(1 << 17)]  # too large to pack: the engine copies it on its own
        data[12] = torch.ones(2, 2).t()  # not contiguous, at the root
        data[13] = collections.defaultdict(list, x=[torch.ones(5)])
        return data

    with parallel_walk(True):
        copy_many(make, 20)


def test_a_failing_element_fails_the_copy_naming_it_and_keeps_the_counts():
    np = pytest.importorskip("numpy", reason="numpy is not installed")
    batch = {own_str(f"s{i}"): element(i) for i in range(16)}
    objects = [*KEYS.values(), LABEL, BIG, *tensors_of(batch)]
    before = counts(objects)
    with parallel_walk(True):
        copy_many(lambda k: batch, 3)
        bad = dict(batch)
        bad[own_str("s5")] = [torch.ones(2), np.array([object()], dtype=object)]
        with pytest.raises(ValueError, match=r"data\['s5'\]\[1\]"):
            mtc.start_copy(bad, "cuda")
        del bad
        copy_many(lambda k: batch, 3)
    mtc.release_deferred()
    gc.collect()
    assert counts(objects) == before


def test_offered_outputs_follow_their_leaves_when_the_shape_changes():
    # Elements whose leaves change in number from one copy to the next: the offers of the last
    # result no longer sit where this walk's leaves are. Values are checked copy by copy.
    def make(k):
        return [element(i, cameras=6 if (i + k) % 4 else 5) for i in range(16)]

    with parallel_walk(True):
        copy_many(make, 40)
    with parallel_walk(False):
        copy_many(make, 4)


def test_the_switch_says_what_it_was():
    previous = _C._set_parallel_walk(False)
    try:
        assert _C._set_parallel_walk(True) is False
    finally:
        _C._set_parallel_walk(previous)
