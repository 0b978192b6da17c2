#!/usr/bin/env python3
"""Writes the small .npy and .pt fixtures that tests/workload reads (committed; ~20 KB).

Run with the project's virtual environment, which has numpy and torch:
    ~/.cache/mtc-bench/venv/bin/python tests/workload/make_fixtures.py

Values follow simple formulas so the C++ tests can check every element without a copy of the
data: element i (in C order) of the numeric .npy fixtures is `expected(i)` below.
"""

import pathlib

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent / "fixtures"

# descr -> file stem. Element i is: bool (i % 3 == 0); unsigned i; signed i - 2;
# float i * 0.5 - 1; complex (i * 0.5 - 1) + (-i) j.
NUMERIC = {
    "|b1": "bool",
    "|u1": "uint8",
    "|i1": "int8",
    "<i2": "int16",
    "<i4": "int32",
    "<i8": "int64",
    "<f2": "float16",
    "<f4": "float32",
    "<f8": "float64",
    "<c8": "complex64",
    "<c16": "complex128",
}


def expected(descr, count):
    i = np.arange(count)
    kind = descr[1]
    if kind == "b":
        return (i % 3 == 0)
    if kind == "u":
        return i
    if kind == "i":
        return i - 2
    if kind == "f":
        return i * 0.5 - 1
    return (i * 0.5 - 1) + (-i) * 1j


def write_npy():
    npy = HERE / "npy"
    npy.mkdir(parents=True, exist_ok=True)
    for descr, stem in NUMERIC.items():
        np.save(npy / f"{stem}.npy", expected(descr, 6).astype(descr).reshape(2, 3))
    np.save(npy / "scalar.npy", np.float32(3.5))
    np.save(npy / "empty.npy", np.zeros((0, 3), np.float32))
    np.save(npy / "fortran.npy", np.asfortranarray(np.arange(12, dtype=np.int32).reshape(3, 4)))
    for major in (2, 3):
        with open(npy / f"v{major}.npy", "wb") as f:
            np.lib.format.write_array(f, np.arange(5, dtype=np.int64), version=(major, 0))
    # Rejected ones: each names one error class of the reader.
    np.save(npy / "big_endian.npy", np.arange(6, dtype=">f4"))
    np.save(npy / "uint16.npy", np.arange(6, dtype="<u2"))
    np.save(npy / "structured.npy", np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")]))
    np.save(npy / "object.npy", np.array(["a", 1], dtype=object), allow_pickle=True)
    (npy / "not_npy.npy").write_bytes(b"this is not a numpy file\n")
    good = (npy / "float32.npy").read_bytes()
    with open(npy / "truncated.npy", "wb") as f:
        np.save(f, np.arange(16, dtype=np.float32).reshape(4, 4))
    data = (npy / "truncated.npy").read_bytes()
    (npy / "truncated.npy").write_bytes(data[: len(data) - 10])
    (npy / "trailing.npy").write_bytes(good + b"\0\0\0\0")
    header_len = int.from_bytes(good[8:10], "little")
    bad_header = bytearray(good)
    bad_header[10 : 10 + header_len - 1] = b"{'descr': <f4 ???".ljust(header_len - 1)
    (npy / "bad_header.npy").write_bytes(bytes(bad_header))


def arange(count, dtype):
    return torch.arange(count).to(dtype)


def write_pt():
    pt = HERE / "pt"
    pt.mkdir(parents=True, exist_ok=True)
    batch = {
        "images": [arange(6, torch.float32).reshape(2, 3), arange(4, torch.uint8)],
        "meta": {"name": "sample-0", "id": 7, "scale": 0.5, "flag": True, "none": None},
        "pair": (arange(3, torch.int64), "tag"),
        "nested": [{"boxes": arange(8, torch.float32).reshape(2, 4)},
                   {"boxes": arange(4, torch.float32).reshape(1, 4)}],
        "transposed": arange(6, torch.float64).reshape(2, 3).t(),
        "half": arange(5, torch.bfloat16),
        "mask": torch.tensor([True, False, True]),
    }
    torch.save(batch, pt / "batch.pt")
    torch.save([arange(2, torch.int32), arange(3, torch.int32)], pt / "list.pt")
    torch.save(batch, pt / "legacy.pt", _use_new_zipfile_serialization=False)
    data = (pt / "batch.pt").read_bytes()
    (pt / "corrupt.pt").write_bytes(data[: len(data) // 2])
    (pt / "not_pt.pt").write_bytes(b"just some text, not a zip archive\n")


if __name__ == "__main__":
    write_npy()
    write_pt()
    total = sum(p.stat().st_size for p in HERE.rglob("*") if p.is_file())
    print(f"wrote fixtures under {HERE} ({total} bytes)")
