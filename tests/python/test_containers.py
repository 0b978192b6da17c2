"""The containers of torch.utils._pytree beyond list, tuple and dict: named tuples, OrderedDict,
defaultdict and deque are taken apart and rebuilt as their own types (CPU target)."""

import collections
import typing
import weakref
from unittest import mock

import pytest
import torch
import torch.utils._pytree as pytree

import mtc
from support import assert_copied, leaf_that_runs

Point = collections.namedtuple("Point", "x y")


class Boxes(typing.NamedTuple):
    boxes: torch.Tensor
    labels: list
    score: float = 0.5


class PointWithNorm(Point):
    """A subclass of a named tuple is a named tuple too (pytree's rule)."""

    def norm(self):
        return (self.x**2 + self.y**2).sqrt()


def copy(data, **options):
    handle = mtc.start_copy(data, "cpu", **options)
    return handle.get(), handle


def nested():
    t = torch.arange(3.0)
    return {
        "points": [Point(t, t + 1), PointWithNorm(t, t)],
        "boxes": Boxes(torch.ones(2, 4), [torch.zeros(2), "label"]),
        "ordered": collections.OrderedDict([("b", t), ("a", [t, 1])]),
        "counts": collections.defaultdict(list, {"x": [t], 3: (t,)}),
        "window": collections.deque([t, {"k": t}], maxlen=5),
        "unbounded": collections.deque([t]),
        "empty": (Point(None, None), collections.OrderedDict(), collections.deque(maxlen=0)),
    }


@pytest.mark.parametrize("background", [True, False])
def test_every_kind_is_rebuilt_as_its_own_type(background):
    data = nested()
    out, handle = copy(data, use_background_thread=background)
    assert_copied(out, data, "cpu")
    assert type(out["points"][1]) is PointWithNorm and torch.equal(out["points"][1].norm(), data["points"][1].norm())
    assert out["boxes"].score == 0.5 and out["boxes"]._fields == Boxes._fields
    assert handle.stats()["tensors"] == sum(isinstance(x, torch.Tensor) for x in pytree.tree_leaves(data))


def test_the_result_has_pytrees_structure():
    data = nested()
    out, _ = copy(data)
    assert pytree.tree_structure(out) == pytree.tree_structure(data)


def test_ordered_dict_keeps_its_own_order_after_move_to_end():
    data = collections.OrderedDict([("a", torch.zeros(1)), ("b", torch.ones(1)), ("c", torch.full((1,), 2.0))])
    data.move_to_end("a")
    data.move_to_end("c", last=False)
    out, _ = copy(data)
    assert list(out) == ["c", "b", "a"] and type(out) is collections.OrderedDict
    assert [v.item() for v in out.values()] == [2.0, 1.0, 0.0]


def test_defaultdict_keeps_its_factory_and_its_behaviour():
    data = collections.defaultdict(lambda: "missing", {"t": torch.ones(1)})
    out, _ = copy(data)
    assert out.default_factory is data.default_factory and out["absent"] == "missing"
    assert "absent" not in data
    no_factory = collections.defaultdict(None, {"t": torch.ones(1)})
    assert copy(no_factory)[0].default_factory is None


def test_deque_keeps_its_maxlen_and_order():
    data = collections.deque((torch.full((1,), float(i)) for i in range(4)), maxlen=4)
    out, _ = copy(data)
    assert out.maxlen == 4 and [t.item() for t in out] == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("root", [Point(torch.ones(1), 2), collections.OrderedDict(a=torch.ones(1)),
                                  collections.defaultdict(int, a=torch.ones(1)), collections.deque([torch.ones(1)])],
                         ids=["namedtuple", "OrderedDict", "defaultdict", "deque"])
def test_each_kind_as_the_root(root):
    out, handle = copy(root)
    assert_copied(out, root, "cpu")
    assert handle.stats()["tensors"] == 1


def test_a_large_deque_and_ordered_dict_are_split_and_put_back_in_order():
    data = collections.OrderedDict((f"k{i}", collections.deque([torch.full((1,), i), i])) for i in range(2000))
    data.move_to_end("k0")
    out, handle = copy(data)
    assert_copied(out, data, "cpu")
    assert handle.stats()["tensors"] == 2000


def test_an_error_names_its_place_through_every_kind():
    np = pytest.importorskip("numpy", reason="numpy is not installed: the bad leaf is an object array")
    bad = np.array(["x"], dtype=object)
    data = {"p": Point(1, collections.OrderedDict(k=collections.deque([0, collections.defaultdict(int, d=bad)])))}
    with pytest.raises(ValueError, match=r"data\['p'\]\[1\]\['k'\]\[1\]\['d'\]: numpy array cannot become a tensor"):
        mtc.start_copy(data, "cpu")


def test_a_named_tuple_whose_constructor_refuses_the_elements_fails_get():
    class Strict(collections.namedtuple("Strict", "t")):
        def __new__(cls, t):
            if t is not None and not isinstance(t, str):
                raise TypeError("Strict wants a str")
            return super().__new__(cls, t)

    # pytree rebuilds a named tuple with cls(*values) too; this one refuses a tensor.
    data = [tuple.__new__(Strict, (torch.ones(1),))]
    handle = mtc.start_copy(data, "cpu")
    with pytest.raises(TypeError, match="Strict wants a str") as first:
        handle.get()
    # The engine's output went with the failed build: a second get() raises the same error, not
    # one about an output already taken.
    with pytest.raises(TypeError, match="Strict wants a str") as second:
        handle.get()
    assert second.value is first.value
    assert handle.ready()


def test_a_deque_changed_by_the_walk_is_an_error_not_a_crash():
    data = collections.deque()
    data.extend([leaf_that_runs(lambda: data.append(1)), torch.ones(1)])
    with pytest.raises(RuntimeError, match="deque mutated during iteration"):
        mtc.start_copy(data, "cpu")


def test_a_dict_emptied_by_the_walk_still_gives_the_entries_taken_before():
    # The walk takes a dict's entries (up to 16) with references before it walks them: the
    # tensors only the dict held stay alive, and come back as they were taken.
    data = {}
    leaf = leaf_that_runs(data.clear)
    data.update({"leaf": leaf, "t": torch.arange(3.0) * 2, "nested": [torch.ones(2), "s"]})
    alive = weakref.ref(data["t"])
    handle = mtc.start_copy(data, "cpu")
    assert not data and alive() is not None  # emptied by the walk, the tensor held by the copy
    out = handle.get()
    assert list(out) == ["leaf", "t", "nested"]
    assert out["leaf"] is leaf
    assert torch.equal(out["t"], torch.arange(3.0) * 2)
    assert torch.equal(out["nested"][0], torch.ones(2)) and out["nested"][1] == "s"


def test_a_tensor_dropped_by_the_walk_before_its_intake_is_still_copied():
    # Tensor leaves are taken in after the walk; one its list dropped meanwhile is held till then.
    data = [torch.arange(4.0) + 1]
    alive = weakref.ref(data[0])
    data.append(leaf_that_runs(data.clear))
    handle = mtc.start_copy(data, "cpu")
    assert not data and alive() is not None
    out = handle.get()
    assert len(out) == 2 and torch.equal(out[0], torch.arange(4.0) + 1)


def test_an_object_that_only_claims_to_be_a_tensor_is_an_opaque_leaf():
    # isinstance() believes __class__: a Mock with a tensor's spec passes it, yet it is no tensor.
    fake = mock.Mock(spec=torch.Tensor)
    assert isinstance(fake, torch.Tensor)
    out = mtc.start_copy({"fake": fake, "real": torch.ones(2)}, "cpu").get()
    assert out["fake"] is fake
