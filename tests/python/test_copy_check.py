"""scripts/copy_check.py, the check behind bench_python.py's "verified" column: it accepts an
exact copy and refuses every kind of difference. Runs on the CPU."""

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from copy_check import difference, target_device  # noqa: E402

from support import gpu_mark  # noqa: E402


def batch():
    return [{"boxes": torch.rand(5, 4), "ids": torch.arange(5), "name": "cam0",
             "nan": torch.tensor([float("nan"), -0.0])}, (torch.ones(2, dtype=torch.bool), 3)]


def copy_of(data):
    if type(data) in (list, tuple):
        return type(data)(copy_of(x) for x in data)
    if type(data) is dict:
        return {k: copy_of(v) for k, v in data.items()}
    return data.clone() if isinstance(data, torch.Tensor) else data


def test_an_exact_copy_passes():
    ref = batch()
    assert difference(copy_of(ref), ref, "cpu") is None


@pytest.mark.parametrize("change, fragment", [
    (lambda out: out[0]["boxes"].__setitem__((0, 0), 2.0), "the values differ"),
    (lambda out: out[0].__setitem__("ids", out[0]["ids"].int()), "torch.int32"),
    (lambda out: out[0].__setitem__("boxes", out[0]["boxes"].reshape(4, 5)), "(4, 5)"),
    (lambda out: out[0].__setitem__("nan", torch.tensor([float("nan"), 0.0])), "the values differ"),
    (lambda out: out[0].__setitem__("name", "".join(["cam", "0"])), "not the input's object"),
    (lambda out: out[0].pop("ids"), "elements"),
    (lambda out: out.__setitem__(1, list(out[1])), "expected a tuple"),
    (lambda out: out.append(None), "3 elements, expected 2"),
    (lambda out: out[0].__setitem__("boxes", out[0]["boxes"].tolist()), "expected a tensor"),
])
def test_every_kind_of_difference_is_refused_and_named(change, fragment):
    ref = batch()
    out = copy_of(ref)
    change(out)
    why = difference(out, ref, "cpu")
    assert why is not None and fragment in why, why


def test_key_order_counts():
    ref = {"a": torch.ones(1), "b": torch.zeros(1)}
    assert "keys" in difference({"b": ref["b"].clone(), "a": ref["a"].clone()}, ref, "cpu")


def test_the_input_itself_is_not_a_copy():
    ref = batch()
    assert "not a copy" in difference(ref, ref, "cpu")


def test_nothing_to_compare_does_not_pass():
    assert difference(["a", 1], ["a", 1], "cpu") == "data: no tensor to compare"


def test_the_device_is_checked():
    ref = [torch.ones(2)]
    assert "expected meta" in difference([torch.ones(2)], ref, "meta")


def test_a_bare_cuda_means_the_current_device():
    ref = [torch.rand(3)]
    assert target_device("cuda") == torch.device("cuda", torch.cuda.current_device())
    assert difference([ref[0].to("cuda")], ref, "cuda") is None


test_a_bare_cuda_means_the_current_device.pytestmark = gpu_mark()
