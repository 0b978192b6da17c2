// Reader of .npy files as written by numpy.save (format versions 1.0, 2.0 and 3.0).
//
// Supported element types (descr): |b1 bool, |u1 uint8, |i1 int8, <i2 int16, <i4 int32,
// <i8 int64, <f2 float16, <f4 float32, <f8 float64, <c8 complex64, <c16 complex128.
// Little-endian ('<', or '=' on this little-endian host) only; one-byte types with any byte
// order mark. Big-endian files, other types (unsigned 16..64-bit, strings, objects,
// structured dtypes) and files whose size disagrees with their header are rejected.
//
// The result is a CPU tensor that owns the file's bytes: the file is read once into an aligned
// buffer and the tensor is a view of it, with no further copy (numpy aligns the data to 64
// bytes; an unaligned offset from another writer costs one copy). fortran_order=True gives
// the same shape with column-major strides: a non-contiguous tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace mtc::bench {

// Throws ConfigError naming `path` for every problem.
at::Tensor load_npy(const std::string& path);

}  // namespace mtc::bench
