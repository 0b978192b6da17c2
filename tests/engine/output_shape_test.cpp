// The shape an output takes from a contiguous input (make_view and reuse_as_view,
// detail/outputs.h): its sizes, strides, element count and memory-format flags copied from the
// input rather than computed again. Each must be what torch computes for a tensor of those sizes
// and strides, as `.to()` makes one (empty_strided with the input's strides). Runs without a GPU.
#include <ATen/core/Tensor.h>
#include <ATen/ops/as_strided.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "detail/outputs.h"
#include "test_constants.h"

namespace {

using mtc::detail::make_view;
using mtc::detail::reuse_as_view;

struct Shape {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

// Contiguous inputs whose flags are easy to get wrong: dimensions of size 1 (any stride counts
// as contiguous there), a channel dimension of 1 (contiguous and channels-last contiguous at
// once), no dimension, no element.
std::vector<Shape> contiguous_shapes() {
  return {
      {{}, {}},
      {{7}, {1}},
      {{3, 4}, {4, 1}},
      {{3, 1}, {1, 5}},  // a size-1 dimension with an odd stride
      {{1, 6}, {100, 1}},
      {{2, 1, 4, 5}, {20, 20, 5, 1}},         // NCHW with C = 1: channels-last contiguous too
      {{2, 3, 1, 1}, {3, 1, 1, 1}},           // H = W = 1
      {{2, 1, 4, 5}, {20, 1, 5, 1}},          // C = 1, its stride odd
      {{1, 1, 2, 3, 4}, {24, 24, 12, 4, 1}},  // 5-D, C = 1: channels-last-3d contiguous too
      {{0, 3}, {3, 1}},
      {{4, 0, 2}, {0, 2, 1}},
  };
}

at::Tensor contiguous_input(const Shape& shape) {
  int64_t extent = 1;
  for (size_t d = 0; d < shape.sizes.size(); ++d)
    if (shape.sizes[d] > 0) extent += (shape.sizes[d] - 1) * shape.strides[d];
  const at::Tensor base = at::zeros({std::max<int64_t>(extent, 1)}, at::kFloat);
  at::Tensor input = base.as_strided(shape.sizes, shape.strides);
  EXPECT_TRUE(input.is_contiguous()) << "a test shape must be contiguous";
  return input;
}

std::string name_of(const Shape& shape) {
  std::string out = "sizes " + c10::str(c10::IntArrayRef(shape.sizes)) + " strides " +
                    c10::str(c10::IntArrayRef(shape.strides));
  return out;
}

// `out` as torch makes a tensor of `like`'s sizes and strides: every cached fact about its shape.
void expect_shape_as_torch_makes_it(const at::Tensor& out, const at::Tensor& like,
                                    const std::string& what) {
  const at::Tensor reference = at::empty_strided(like.sizes(), like.strides(), like.options());
  EXPECT_EQ(out.sizes(), reference.sizes()) << what;
  EXPECT_EQ(out.strides(), reference.strides()) << what;
  EXPECT_EQ(out.numel(), reference.numel()) << what;
  EXPECT_EQ(out.dim(), reference.dim()) << what;
  for (const auto format : {at::MemoryFormat::Contiguous, at::MemoryFormat::ChannelsLast,
                            at::MemoryFormat::ChannelsLast3d}) {
    EXPECT_EQ(out.is_contiguous(format), reference.is_contiguous(format))
        << what << ", is_contiguous(" << format << ")";
  }
  EXPECT_EQ(out.is_non_overlapping_and_dense(), reference.is_non_overlapping_and_dense()) << what;
  EXPECT_EQ(out.unsafeGetTensorImpl()->is_strides_like_channels_last(),
            reference.unsafeGetTensorImpl()->is_strides_like_channels_last())
      << what;
  EXPECT_EQ(out.unsafeGetTensorImpl()->is_strides_like_channels_last_3d(),
            reference.unsafeGetTensorImpl()->is_strides_like_channels_last_3d())
      << what;
  EXPECT_EQ(out.suggest_memory_format(), reference.suggest_memory_format()) << what;
}

c10::Storage cpu_storage(int64_t bytes) { return at::zeros({bytes}, at::kByte).storage(); }

TEST(OutputShape, AViewOfAContiguousInputHasTheShapeTorchGivesItsStrides) {
  const c10::Storage storage = cpu_storage(4096);
  for (const Shape& shape : contiguous_shapes()) {
    const at::Tensor like = contiguous_input(shape);
    const at::Tensor out = make_view(storage, 64, like);
    expect_shape_as_torch_makes_it(out, like, name_of(shape));
    EXPECT_EQ(out.storage_offset(), 64 / 4) << name_of(shape);
  }
}

TEST(OutputShape, AReusedOutputTakesTheNewInputsShapeWhole) {
  const c10::Storage chunk = cpu_storage(4096);
  for (const Shape& shape : contiguous_shapes()) {
    // The offered output had another shape, with every flag of its own: none may survive.
    const at::Tensor old_like =
        at::zeros({2, 3, 4, 5}, at::kFloat).contiguous(at::MemoryFormat::ChannelsLast);
    at::Tensor offered = make_view(cpu_storage(1024), 0, old_like);
    ASSERT_TRUE(offered.is_contiguous(at::MemoryFormat::ChannelsLast));
    const at::Tensor like = contiguous_input(shape);
    std::vector<c10::Storage> released;
    ASSERT_TRUE(
        reuse_as_view(*offered.unsafeGetTensorImpl(), chunk, 128, like, mtc::test::kCpu, released))
        << name_of(shape);
    expect_shape_as_torch_makes_it(offered, like, name_of(shape));
    EXPECT_EQ(offered.storage_offset(), 128 / 4) << name_of(shape);
  }
}

// Computed again from the sizes (the setting the benchmarks compare against), a contiguous
// output has torch's canonical strides, whatever the input's size-1 dimensions had.
TEST(OutputShape, ComputedShapesHaveCanonicalStrides) {
  mtc::detail::set_copied_shape(false);
  const at::Tensor like = contiguous_input({{3, 1}, {1, 5}});
  const at::Tensor out = make_view(cpu_storage(64), 0, like);
  mtc::detail::set_copied_shape(true);
  EXPECT_EQ(out.strides(), (std::vector<int64_t>{1, 1}));
  EXPECT_TRUE(out.is_contiguous());
}

}  // namespace
