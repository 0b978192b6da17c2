"""start_copy's signature, and how it converts its device and options (CPU target)."""

import ast
import functools
import gc
import inspect
import re
from pathlib import Path

import pytest
import torch

import mtc

DEFAULTS = dict(
    use_pinned_staging=True,
    pack_cpu_tensors=True,
    min_packed_alignment_bytes=16,
    max_packed_chunk_bytes=32 * 1024 * 1024,
    use_background_thread=True,
    pinned_host_outputs=False,
)


def options_of(**options):
    handle = mtc.start_copy([torch.ones(1)], "cpu", **options)
    handle.get()
    return handle.options()


def test_start_copy_has_a_real_annotated_signature():
    signature = inspect.signature(mtc.start_copy)
    parameters = signature.parameters
    assert list(parameters)[:2] == ["data", "device"]
    assert {n: p.default for n, p in parameters.items() if p.kind is p.KEYWORD_ONLY} == DEFAULTS
    assert parameters["device"].annotation is mtc.DeviceLike
    assert parameters["min_packed_alignment_bytes"].annotation is int
    assert signature.return_annotation is mtc.AsyncCopyHandle
    assert "min_packed_alignment_bytes: int = 16" in str(signature)


def test_partial_and_help_see_the_keywords():
    to_cpu = functools.partial(mtc.start_copy, device="cpu", pack_cpu_tensors=False)
    t = torch.ones(2)
    handle = to_cpu([t])
    assert handle.get()[0] is t and handle.options()["pack_cpu_tensors"] is False
    assert "use_pinned_staging" in pydoc_text(mtc.start_copy)


def pydoc_text(thing):
    import pydoc

    return pydoc.render_doc(thing, renderer=pydoc.plaintext)


def test_the_docstring_names_every_default():
    for name, value in DEFAULTS.items():
        assert re.search(rf"{name}: \w+ = {value}\b", str(inspect.signature(mtc.start_copy))), name
        assert name in mtc.start_copy.__doc__


def test_the_stub_matches_the_binding():
    # _C.pyi documents the binding mtc.start_copy calls: the same parameters in the same order.
    stub = ast.parse(Path(mtc.__file__).with_name("_C.pyi").read_text())
    function = next(n for n in stub.body if isinstance(n, ast.FunctionDef) and n.name == "start_copy")
    stub_names = [a.arg for a in function.args.args]
    first_line = mtc._C.start_copy.__doc__.splitlines()[0]
    assert re.findall(r"(\w+): ", first_line) == stub_names
    assert stub_names[2:] == list(DEFAULTS)
    handle_methods = {n.name for n in stub.body if isinstance(n, ast.ClassDef) for n in n.body
                      if isinstance(n, ast.FunctionDef)}
    assert handle_methods == {m for m in dir(mtc.AsyncCopyHandle) if not m.startswith("_")}


def test_the_defaults_reach_the_engine():
    assert options_of() == dict(device="cpu", **DEFAULTS)


def test_every_option_is_forwarded():
    changed = dict(use_pinned_staging=False, pack_cpu_tensors=False, min_packed_alignment_bytes=64,
                   max_packed_chunk_bytes=4096, use_background_thread=False, pinned_host_outputs=True)
    assert options_of(**changed) == dict(device="cpu", **changed)


@pytest.mark.parametrize("device", ["cpu", "cpu:0", torch.device("cpu"), b"cpu"])
def test_device_as_torch_accepts_it(device):
    t = torch.ones(1)
    handle = mtc.start_copy([t], device)
    assert handle.get()[0] is t
    assert handle.options()["device"] in ("cpu", "cpu:0")


def test_an_int_device_is_a_cuda_index_as_for_torch_device():
    if torch.cuda.is_available():
        handle = mtc.start_copy([torch.ones(1)], 0)
        handle.get()
        assert handle.options()["device"] == "cuda:0"
    else:
        with pytest.raises(ValueError, match="target cuda:0 "):
            mtc.start_copy([torch.ones(1)], 0)


@pytest.mark.parametrize("device", [None, 1.5, True, [0], object()])
def test_a_device_torch_device_refuses_by_type_is_a_one_line_type_error(device):
    with pytest.raises(TypeError, match="device must be a torch.device, str, bytes or int") as error:
        mtc.start_copy([], device)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("device,fragment", [("gpu0", "bad device 'gpu0'"), (b"gpu0", "bad device bytes"),
                                             (-1, "bad device int -1")])
def test_a_device_value_torch_device_refuses_is_a_value_error(device, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)) as error:
        mtc.start_copy([], device)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("value,expected", [
    (64, 64), (1.5e6, 1_500_000), (64.0, 64), (True, 1),
    (__import__("numpy").int64(32) if __import__("importlib").util.find_spec("numpy") else 32, 32),
])
def test_integers_through_operator_index_and_integral_floats(value, expected):
    assert options_of(min_packed_alignment_bytes=value)["min_packed_alignment_bytes"] == expected
    assert options_of(max_packed_chunk_bytes=value)["max_packed_chunk_bytes"] == expected


@pytest.mark.parametrize("value", ["16", 1.5, float("nan"), float("inf"), None, [16], b"16"])
@pytest.mark.parametrize("option", ["min_packed_alignment_bytes", "max_packed_chunk_bytes"])
def test_an_integer_option_of_another_type_is_a_one_line_type_error_naming_it(option, value):
    with pytest.raises(TypeError, match=f"mtc.start_copy: {option} must be an integer") as error:
        mtc.start_copy([], "cpu", **{option: value})
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 1e300])
def test_an_integer_beyond_int64_is_a_value_error(value):
    with pytest.raises(ValueError, match="max_packed_chunk_bytes is out of range"):
        mtc.start_copy([], "cpu", max_packed_chunk_bytes=value)


@pytest.mark.parametrize("value,expected", [(True, True), (False, False), (1, True), (0, False)])
@pytest.mark.parametrize("option", ["use_pinned_staging", "pack_cpu_tensors", "use_background_thread",
                                    "pinned_host_outputs"])
def test_flags_from_bool_or_0_or_1(option, value, expected):
    assert options_of(**{option: value})[option] is expected


@pytest.mark.parametrize("value", ["no", "", 2, -1, 1.0, None, [True]])
@pytest.mark.parametrize("option", ["use_pinned_staging", "pinned_host_outputs"])
def test_a_flag_of_another_kind_is_a_one_line_type_error_naming_it(option, value):
    # The original package took 'no' as True.
    with pytest.raises(TypeError, match=f"mtc.start_copy: {option} must be a bool") as error:
        mtc.start_copy([], "cpu", **{option: value})
    assert "\n" not in str(error.value)


def test_numpy_bools_are_flags_as_numpy_integers_are():
    np = pytest.importorskip("numpy")
    # A mask's element is a numpy.bool_; numpy.int64(1) was taken and numpy.True_ refused.
    assert options_of(use_pinned_staging=np.True_)["use_pinned_staging"] is True
    assert options_of(use_pinned_staging=np.False_)["use_pinned_staging"] is False
    assert options_of(pack_cpu_tensors=np.int64(1))["pack_cpu_tensors"] is True


@pytest.mark.parametrize("switch", ["set_deferred_release", "set_output_reuse"])
def test_the_module_switches_take_what_the_flags_take(switch):
    set_switch = getattr(mtc, switch)
    previous = set_switch(True)
    try:
        # pybind11's bool took None (as False), 0.0 and 2 without a word.
        for value in [None, 0.0, 2, "no"]:
            with pytest.raises(TypeError, match=f"mtc.{switch}: enabled must be a bool") as error:
                set_switch(value)
            assert "\n" not in str(error.value)
            assert set_switch(True) is True, "a refused value changed the setting"
        assert set_switch(0) is True
        assert set_switch(1) is False
    finally:
        set_switch(previous)


def test_options_are_keyword_only_and_unknown_ones_refused():
    with pytest.raises(TypeError):
        mtc.start_copy([], "cpu", True)
    with pytest.raises(TypeError):
        mtc.start_copy([], "cpu", pin=True)


def test_a_device_string_of_a_str_subclass_is_not_remembered():
    # Only exact str devices are remembered between calls: the remembered string is let go of
    # when another replaces it, and a subclass's __del__ could then copy with mtc and find the
    # new string beside the old device.
    seen = []

    class Device(str):
        def __del__(self):
            seen.append(mtc.start_copy([torch.ones(1)], "cpu").options()["device"])

    try:
        mtc.start_copy([torch.ones(1)], Device("cuda")).get()
    except (RuntimeError, ValueError):
        pass  # no GPU here: the device was parsed all the same
    gc.collect()
    mtc.start_copy([torch.ones(1)], "cpu").get()
    gc.collect()
    assert seen == ["cpu"]
