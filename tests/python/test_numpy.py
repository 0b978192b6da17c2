"""numpy arrays as leaves: they become tensors, without a copy where the memory allows it."""

import warnings

import pytest
import torch

import mtc

np = pytest.importorskip("numpy", reason="numpy is not installed: the numpy tests need it")


def copy(data, device="cpu"):
    return mtc.start_copy(data, device).get()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "int8", "uint8", "bool", "complex64"])
def test_arrays_become_tensors_of_the_same_dtype_and_values(dtype):
    array = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    out = copy({"a": [array]})["a"][0]
    assert isinstance(out, torch.Tensor)
    assert out.numpy().dtype == array.dtype
    np.testing.assert_array_equal(out.numpy(), array)


def test_a_contiguous_array_is_not_copied():
    array = np.arange(10, dtype=np.float32)
    out = copy([array])[0]
    assert out.data_ptr() == array.ctypes.data


def test_a_strided_array_is_not_copied():
    array = np.arange(24, dtype=np.int64).reshape(4, 6)[:, ::2]
    out = copy([array])[0]
    assert out.data_ptr() == array.ctypes.data
    np.testing.assert_array_equal(out.numpy(), array)


def test_an_array_with_negative_strides_is_copied_to_a_contiguous_one():
    array = np.arange(10, dtype=np.float32)[::-1]
    out = copy([array])[0]
    np.testing.assert_array_equal(out.numpy(), array)


def test_a_read_only_array_is_copied_without_a_warning():
    array = np.arange(4.0)
    array.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = copy([array])[0]
    np.testing.assert_array_equal(out.numpy(), array)


def test_a_read_only_array_comes_back_from_a_copy_to_the_cpu_as_a_copy():
    # The result is writable: over the array's own memory, a write would change an immutable
    # bytes object here (or fault, over a file mapped read-only).
    data = bytes(16)
    array = np.frombuffer(data, np.float32)
    out = copy([array, {"again": array}])
    for tensor in (out[0], out[1]["again"]):
        assert tensor.data_ptr() != array.ctypes.data
        tensor.add_(1)
        np.testing.assert_array_equal(tensor.numpy(), np.ones(4, np.float32))
    assert data == bytes(16)


def test_zero_d_and_empty_arrays():
    data = [np.float32(2.0) * np.ones(()), np.empty((0, 3))]
    out = copy(data)
    assert out[0].shape == () and out[0].item() == 2.0
    assert out[1].shape == (0, 3)


def test_numpy_scalars_are_opaque_leaves():
    scalar = np.float32(1.5)
    assert copy([scalar])[0] is scalar


def test_an_array_of_an_unsupported_dtype_names_its_place():
    with pytest.raises(ValueError, match=r"data\['k'\]\[1\]: numpy array cannot become a tensor"):
        mtc.start_copy({"k": [np.ones(1), np.array(["a"], dtype=object)]}, "cpu")


def test_a_read_only_reversed_array_is_copied_once(monkeypatch):
    # from_numpy refuses its negative strides: the module makes the contiguous copy, which is
    # the result's own memory already and needs no second copy for being read-only.
    made = []
    contiguous = np.ascontiguousarray

    def recording(array):
        made.append(contiguous(array))
        return made[-1]

    monkeypatch.setattr(np, "ascontiguousarray", recording)
    array = np.arange(6, dtype=np.float32)[::-1]
    array.flags.writeable = False
    out = copy([array])[0]
    assert len(made) == 1
    assert out.data_ptr() == made[0].ctypes.data
    np.testing.assert_array_equal(out.numpy(), array)
    out.add_(1)
    np.testing.assert_array_equal(array, np.arange(6, dtype=np.float32)[::-1])
