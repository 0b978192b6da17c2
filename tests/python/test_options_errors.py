"""The options of start_copy at work, and the errors (CPU target); the argument conversions are
in test_arguments.py."""

import itertools
import threading

import pytest
import torch

import mtc
from support import assert_copied


def batch():
    return {"a": [torch.arange(5), torch.ones(2, 3)], "b": (torch.tensor(True), "s", 3)}


@pytest.mark.parametrize(
    "pinned,pack,background", list(itertools.product([True, False], repeat=3)), ids=lambda v: str(v)
)
@pytest.mark.parametrize("alignment,chunk", [(1, 1), (3, 100), (16, 32 << 20), (4096, 1 << 40)])
def test_every_option_combination_copies_right(pinned, pack, background, alignment, chunk):
    data = batch()
    handle = mtc.start_copy(
        data,
        "cpu",
        use_pinned_staging=pinned,
        pack_cpu_tensors=pack,
        min_packed_alignment_bytes=alignment,
        max_packed_chunk_bytes=chunk,
        use_background_thread=background,
    )
    assert_copied(handle.get(), data, "cpu")
    assert handle.stats()["tensors"] == 3


@pytest.mark.parametrize(
    "options,message",
    [
        (dict(min_packed_alignment_bytes=0), "min_packed_alignment_bytes must be >= 1, got 0"),
        (dict(min_packed_alignment_bytes=-4), "min_packed_alignment_bytes must be >= 1, got -4"),
        (dict(max_packed_chunk_bytes=0), "max_packed_chunk_bytes must be > 0, got 0"),
        (dict(max_packed_chunk_bytes=-1), "max_packed_chunk_bytes must be > 0, got -1"),
    ],
)
def test_options_out_of_range_are_value_errors_with_the_engines_message(options, message):
    for data in ([torch.ones(1)], None):  # validated even without tensors
        with pytest.raises(ValueError, match=message):
            mtc.start_copy(data, "cpu", **options)


def test_a_device_string_that_does_not_parse():
    with pytest.raises(ValueError, match="bad device 'gpu0'"):
        mtc.start_copy([], "gpu0")


@pytest.mark.parametrize("device", ["meta", "xpu:0", torch.device("mps")])
def test_an_unsupported_device_type(device):
    with pytest.raises(ValueError, match="unsupported target device"):
        mtc.start_copy([torch.ones(1)], device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here: this test needs a machine without one")
def test_a_cuda_target_without_cuda():
    with pytest.raises(ValueError, match="no CUDA device is available"):
        mtc.start_copy([torch.ones(1)], "cuda")


@pytest.mark.parametrize("device", ["cuda:7", torch.device("cuda", 7), "cuda:100"])
@pytest.mark.parametrize("background", [True, False])
def test_a_cuda_index_that_does_not_exist_is_a_value_error(device, background):
    # On a GPU host this crashed the interpreter; here and there it must only raise.
    if torch.cuda.device_count() > 7:
        pytest.skip("this machine has 8 or more CUDA devices")
    expected = "does not exist" if torch.cuda.is_available() else "no CUDA device is available"
    with pytest.raises(ValueError, match=expected):
        mtc.start_copy([torch.ones(1), {"a": torch.ones(2)}], device, use_background_thread=background)


@pytest.mark.parametrize("background", [True, False])
def test_a_leaf_that_cannot_be_copied_fails_the_copy_on_every_get(background):
    data = [1, {"ok": torch.ones(2), "bad": torch.ones(3).to_sparse()}]
    handle = mtc.start_copy(data, "cpu", use_background_thread=background)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="tensor leaf 1 has layout Sparse"):
            handle.get()
    with pytest.raises(RuntimeError, match="layout Sparse"):
        handle.ready()


def test_a_leaf_on_an_unsupported_device_fails_the_copy():
    with pytest.raises(RuntimeError, match="is on meta"):
        mtc.start_copy([torch.empty(2, device="meta")], "cpu").get()


def test_a_structure_that_holds_itself():
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match=r"data\['x'\]\[0\]\[0\].*nested deeper than 1000 levels"):
        mtc.start_copy({"x": loop}, "cpu")
    inner = {}
    inner["self"] = [inner]
    with pytest.raises(ValueError, match=r"data\['self'\]\[0\]\['self'\]"):
        mtc.start_copy(inner, "cpu")
    # The long path is cut at its ends between characters: a cut inside one would make Python
    # raise a UnicodeDecodeError in place of the ValueError.
    named = {}
    named["a\u00e9"] = named  # "['a\u00e9']" is 7 bytes: byte 60 falls inside the second character
    cut_path = r"data\['a\u00e9'\]\['a\u00e9'\].*\.\.\..*nested deeper"
    with pytest.raises(ValueError, match=cut_path) as raised:
        mtc.start_copy(named, "cpu")
    assert raised.type is ValueError  # not its subclass UnicodeDecodeError


def test_engine_messages_carry_no_cpp_backtrace():
    with pytest.raises(ValueError) as error:
        mtc.start_copy([], "cpu", max_packed_chunk_bytes=0)
    assert "Exception raised from" not in str(error.value)
    assert "\n" not in str(error.value)


def test_nesting_deeper_than_a_small_threads_stack_is_a_value_error():
    # 999 levels take about half a megabyte of the walk's stack: on a thread of 256 KiB the walk
    # overflowed it and ended the interpreter. It now stops while the stack has room for the
    # error, and the thread goes on copying.
    deep = torch.ones(1)
    for _ in range(999):
        deep = [deep]
    outcome = {}

    def copy_on_this_thread():
        try:
            mtc.start_copy(deep, "cpu").get()
            outcome["error"] = None
        except ValueError as error:
            outcome["error"] = str(error)
        outcome["after"] = mtc.start_copy([torch.ones(1)], "cpu").get()

    previous = threading.stack_size(256 * 1024)
    try:
        thread = threading.Thread(target=copy_on_this_thread)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
    assert outcome["error"] is not None, "999 levels fit a 256 KiB stack: the test needs a deeper one"
    assert "as deep as this thread's stack allows" in outcome["error"]
    assert outcome["error"].startswith("mtc.start_copy: data[0][0]")
    assert_copied(outcome["after"], [torch.ones(1)], torch.device("cpu"))
