// load_npy over the fixtures of make_fixtures.py: every supported dtype, layouts, versions.
#include "workload/npy.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <c10/util/complex.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>

#include "test_support.h"

namespace mtc::bench {
namespace {

using testing::fixture;

struct NumericCase {
  const char* stem;
  c10::ScalarType dtype;
};

class NpyNumeric : public ::testing::TestWithParam<NumericCase> {};

// make_fixtures.py: element i is bool (i % 3 == 0); unsigned i; signed i - 2; float i * 0.5 - 1;
// complex (i * 0.5 - 1) + (-i) j.
double expected_real(c10::ScalarType dtype, int64_t i) {
  if (dtype == c10::kBool) return i % 3 == 0 ? 1.0 : 0.0;
  if (dtype == c10::kByte) return static_cast<double>(i);
  if (c10::isIntegralType(dtype, false)) return static_cast<double>(i - 2);
  return static_cast<double>(i) * 0.5 - 1.0;
}

double element(const at::Tensor& t, int64_t i, double* imaginary) {
  const void* p = t.data_ptr();
  *imaginary = 0.0;
  switch (t.scalar_type()) {
    case c10::kBool:
      return static_cast<const bool*>(p)[i];
    case c10::kByte:
      return static_cast<const uint8_t*>(p)[i];
    case c10::kChar:
      return static_cast<const int8_t*>(p)[i];
    case c10::kShort:
      return static_cast<const int16_t*>(p)[i];
    case c10::kInt:
      return static_cast<const int32_t*>(p)[i];
    case c10::kLong:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case c10::kHalf:
      return static_cast<float>(static_cast<const c10::Half*>(p)[i]);
    case c10::kFloat:
      return static_cast<const float*>(p)[i];
    case c10::kDouble:
      return static_cast<const double*>(p)[i];
    case c10::kComplexFloat: {
      const auto c = static_cast<const c10::complex<float>*>(p)[i];
      *imaginary = c.imag();
      return c.real();
    }
    case c10::kComplexDouble: {
      const auto c = static_cast<const c10::complex<double>*>(p)[i];
      *imaginary = c.imag();
      return c.real();
    }
    default:
      ADD_FAILURE() << "unexpected dtype";
      return 0.0;
  }
}

TEST_P(NpyNumeric, LoadsShapeDtypeAndEveryValue) {
  const NumericCase& c = GetParam();
  const at::Tensor t = load_npy(fixture(std::string("npy/") + c.stem + ".npy"));
  EXPECT_EQ(t.scalar_type(), c.dtype);
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_TRUE(t.is_cpu());
  // Mapped in place: numpy aligns the data to 64 bytes and the file buffer is 64-byte aligned.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double imaginary = 0.0;
    EXPECT_EQ(element(t, i, &imaginary), expected_real(c.dtype, i)) << c.stem << " element " << i;
    if (c10::isComplexType(c.dtype)) {
      EXPECT_EQ(imaginary, -static_cast<double>(i));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, NpyNumeric,
    ::testing::Values(NumericCase{"bool", c10::kBool}, NumericCase{"uint8", c10::kByte},
                      NumericCase{"int8", c10::kChar}, NumericCase{"int16", c10::kShort},
                      NumericCase{"int32", c10::kInt}, NumericCase{"int64", c10::kLong},
                      NumericCase{"float16", c10::kHalf}, NumericCase{"float32", c10::kFloat},
                      NumericCase{"float64", c10::kDouble},
                      NumericCase{"complex64", c10::kComplexFloat},
                      NumericCase{"complex128", c10::kComplexDouble}),
    [](const ::testing::TestParamInfo<NumericCase>& param) {
      return std::string(param.param.stem);
    });

TEST(Npy, ScalarAndEmptyArrays) {
  const at::Tensor scalar = load_npy(fixture("npy/scalar.npy"));
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(scalar.data_ptr<float>()[0], 3.5f);
  const at::Tensor empty = load_npy(fixture("npy/empty.npy"));
  EXPECT_EQ(empty.sizes().vec(), (std::vector<int64_t>{0, 3}));
}

TEST(Npy, FortranOrderIsAColumnMajorView) {
  const at::Tensor t = load_npy(fixture("npy/fortran.npy"));
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(t.is_contiguous());
  const at::Tensor dense = t.contiguous();  // row-major: element (i, j) = 4 i + j
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(dense.data_ptr<int32_t>()[i], i);
}

TEST(Npy, FormatVersions2And3) {
  for (const char* name : {"npy/v2.npy", "npy/v3.npy"}) {
    const at::Tensor t = load_npy(fixture(name));
    ASSERT_EQ(t.numel(), 5) << name;
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(t.data_ptr<int64_t>()[i], i) << name;
  }
}

TEST(Npy, ErrorsNameTheFile) {
  const std::string path = fixture("npy/uint16.npy");
  try {
    load_npy(path);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.json_path(), "");
    EXPECT_NE(std::string(e.what()).find("unsupported dtype '<u2'"), std::string::npos) << e.what();
  }
  testing::expect_config_error([] { load_npy(fixture("npy")); }, "", "is a directory");
}

// A version 1.0 .npy file of `header` (a Python dict literal) and no data.
std::string npy_without_data(const std::string& header) {
  std::string padded = header;
  while ((10 + padded.size() + 1) % 64 != 0) padded += ' ';
  padded += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(padded.size() & 0xff);
  bytes += static_cast<char>(padded.size() >> 8);
  return bytes + padded;
}

TEST(Npy, AnEmptyArrayWithHugeOtherDimensionsLoadsOrFailsClearly) {
  testing::TempDir dir;
  // Found by fuzz_npy: the stride past the last dimension overflowed (undefined behaviour).
  const at::Tensor t = load_npy(
      dir.write("f.npy", npy_without_data("{'descr': '<i4', 'fortran_order': True, 'shape': (4, 0, "
                                          "4000000000000301289), }")));
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{4, 0, 4000000000000301289}));
  EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{1, 4, 4}));
  EXPECT_EQ(t.numel(), 0);
  // Strides that cannot be represented at all.
  testing::expect_config_error(
      [&] {
        load_npy(dir.write("c.npy", npy_without_data("{'descr': '<i4', 'fortran_order': False, "
                                                     "'shape': (0, 4000000000000000000, "
                                                     "4000000000000000000), }")));
      },
      "", "the shape's strides do not fit in 64 bits");
}

TEST(Npy, BoolBytesOtherThanZeroOrOneAreRejected) {
  testing::TempDir dir;
  std::string bytes;
  {
    std::ifstream in(fixture("npy/bool.npy"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bytes.back() = 2;
  testing::expect_config_error([&] { load_npy(dir.write("b.npy", bytes)); }, "",
                               "a bool element is 2");
}

}  // namespace
}  // namespace mtc::bench
