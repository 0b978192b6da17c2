"""What start_copy walks, what it rebuilds, and what it returns as it is (CPU target)."""

import collections
import dataclasses

import pytest
import torch
import torch.utils._pytree

import mtc
from support import assert_copied


def copy(data, device="cpu", **options):
    return mtc.start_copy(data, device, **options).get()


def test_nested_lists_tuples_dicts_keep_types_order_and_keys():
    t = torch.arange(6.0).reshape(2, 3)
    data = {
        "z": [t, (t, [t, {}], ()), []],
        1: {"b": None, "a": (1, 2.5, "s", b"x", True)},
        (3, "k"): [[[[t]]]],
        "empty": {},
    }
    out = copy(data)
    assert_copied(out, data, "cpu")
    assert list(out) == ["z", 1, (3, "k"), "empty"]


def test_tensors_already_on_the_target_come_back_as_the_same_objects():
    a, b = torch.ones(3), torch.zeros(2, dtype=torch.int64)
    out = copy([a, {"b": b}])
    assert out[0] is a and out[1]["b"] is b


def test_dict_key_objects_are_the_input_keys():
    class Key:
        def __hash__(self):
            return 7

    key = Key()
    data = {key: torch.ones(1), "s": 2}
    out = copy(data)
    assert next(iter(out)) is key


@pytest.mark.parametrize(
    "root",
    [torch.arange(4), 5, "text", None, 2.5],
    ids=["tensor", "int", "str", "None", "float"],
)
def test_a_root_that_is_a_leaf(root):
    out = copy(root)
    assert out is root


def test_empty_containers_at_the_root():
    for root in ([], (), {}):
        out = copy(root)
        assert out == root and type(out) is type(root)
        assert out is not root or root == ()  # the empty tuple is a singleton


def test_opaque_leaves_come_back_by_identity_with_tensors_inside_untouched():
    # What torch.utils._pytree does not take apart either: subclasses of list, dict, tuple and
    # OrderedDict (a constructor of their own may want more than the elements), dataclasses, ...
    @dataclasses.dataclass
    class Box:
        tensor: torch.Tensor

    class ListSubclass(list):
        pass

    class DictSubclass(dict):
        pass

    class OrderedSubclass(collections.OrderedDict):
        pass

    class TupleSubclass(tuple):
        pass

    t = torch.ones(2)
    leaves = [
        Box(t),
        ListSubclass([t]),
        DictSubclass(a=t),
        OrderedSubclass(a=t),
        TupleSubclass((t,)),
        object(),
        torch.device("cpu"),
        torch.float32,
        range(3),
        {1, 2},
        # Registered with pytree by torch, but not one of its built-in node types: a leaf here,
        # like any other type registered with pytree (docs/python.md).
        torch.return_types.max((t, t)),
    ]
    out = copy([leaves, tuple(leaves)])
    for got, leaf in zip(out[0] + list(out[1]), leaves + leaves):
        assert got is leaf
    for leaf in leaves[:-1]:
        assert torch.utils._pytree.tree_is_leaf(leaf)  # pytree agrees


def test_tensor_subclasses_are_tensor_leaves():
    p = torch.nn.Parameter(torch.ones(3))

    class MyTensor(torch.Tensor):
        pass

    m = torch.ones(2).as_subclass(MyTensor)
    handle = mtc.start_copy({"p": p, "m": m}, "cpu")
    out = handle.get()
    assert out["p"] is p and out["m"] is m  # on the target already: the same objects
    assert handle.stats()["tensors"] == 2


def test_views_and_odd_layouts_of_dense_tensors():
    base = torch.arange(24.0).reshape(4, 6)
    data = [base.t(), base[:, ::2], base[1:3], torch.empty(0), torch.tensor(3.0), torch.ones(2, dtype=torch.complex64)]
    assert_copied(copy(data), data, "cpu")


def test_deep_nesting_within_the_limit():
    data = torch.ones(1)
    for _ in range(900):
        data = [data]
    out = copy(data)
    for _ in range(900):
        out = out[0]
    assert torch.equal(out, torch.ones(1))


def test_a_large_flat_structure_is_split_and_put_back_in_order():
    data = {"x": [torch.full((1,), i) for i in range(3000)], "y": [(i, torch.full((2,), -i)) for i in range(3000)]}
    out = copy(data)
    assert_copied(out, data, "cpu")
