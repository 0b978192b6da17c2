#include "gpu_test_support.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/imag.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <map>

#include "structure_compare.h"

namespace mtc::test {

const std::vector<at::ScalarType>& all_dtypes() {
  static const std::vector<at::ScalarType> dtypes{
      at::kBool, at::kByte,     at::kChar,  at::kShort,  at::kInt,          at::kLong,
      at::kHalf, at::kBFloat16, at::kFloat, at::kDouble, at::kComplexFloat, at::kComplexDouble};
  return dtypes;
}

at::Tensor to_device(const at::Tensor& t, const c10::Device& device) {
  return t.to(at::TensorOptions().device(device));
}

// Random bytes of `dtype` (NaN payloads included for the floating types; 0/1 for bool).
at::Tensor random_tensor(at::ScalarType dtype, at::IntArrayRef sizes, const c10::Device& device) {
  int64_t numel = 1;
  for (const int64_t s : sizes) numel *= s;
  at::Tensor t;
  if (dtype == at::kBool) {
    t = at::randint(2, {numel}, at::kByte).to(at::kBool);
  } else {
    const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(dtype));
    t = at::randint(256, {bytes}, at::kByte).view(dtype);
  }
  return to_device(t.reshape(sizes), device);
}

// The values' bytes, in logical order (lazy conjugation resolved).
std::vector<uint8_t> bytes_of(const at::Tensor& t) {
  const at::Tensor c = t.resolve_conj().resolve_neg().cpu().contiguous();
  std::vector<uint8_t> out(c.nbytes());
  if (!out.empty()) std::memcpy(out.data(), c.const_data_ptr(), out.size());
  return out;
}

// Same dtype, sizes, device and bits. Strides too where the input layout is dense (the
// engine keeps dense layouts and makes others contiguous).
void expect_copy_of(const at::Tensor& out, const at::Tensor& in, const c10::Device& target) {
  ASSERT_EQ(out.defined(), in.defined());
  if (!in.defined()) return;
  EXPECT_EQ(out.device(), target);
  EXPECT_EQ(out.scalar_type(), in.scalar_type());
  ASSERT_EQ(out.sizes(), in.sizes());
  if (in.is_non_overlapping_and_dense()) {
    EXPECT_EQ(out.strides(), in.strides()) << "dense layout not kept";
  } else {
    EXPECT_TRUE(out.is_contiguous());
  }
  EXPECT_TRUE(bytes_of(out) == bytes_of(in)) << "values differ";
}

// `out` has the shape of `in` with new containers; tensor leaves already on the target are the
// very same tensors, the others copies of them.
void expect_structure_copy(const c10::IValue& out, const c10::IValue& in,
                           const c10::Device& target) {
  mtc::test::expect_same_structure(
      out, in, [&target](const at::Tensor& o, const at::Tensor& i, size_t) {
        if (i.defined() && i.device() == target) {
          EXPECT_TRUE(o.is_same(i)) << "a tensor already on the target was not reused";
        } else {
          expect_copy_of(o, i, target);
        }
      });
}

// The same structure with every tensor replaced by fn(tensor).
c10::IValue map_tensors(const c10::IValue& v,
                        const std::function<at::Tensor(const at::Tensor&)>& fn) {
  if (v.isTensor()) return v.toTensor().defined() ? c10::IValue(fn(v.toTensor())) : v;
  if (v.isList()) {
    c10::impl::GenericList l(v.toList().elementType());
    for (const c10::IValue& e : v.toListRef()) l.push_back(map_tensors(e, fn));
    return l;
  }
  if (v.isTuple()) {
    std::vector<c10::IValue> e;
    for (const c10::IValue& x : v.toTupleRef().elements()) e.push_back(map_tensors(x, fn));
    return c10::ivalue::Tuple::create(std::move(e));
  }
  if (v.isGenericDict()) {
    const auto d = v.toGenericDict();
    c10::impl::GenericDict out(d.keyType(), d.valueType());
    for (const auto& e : d) out.insert(e.key(), map_tensors(e.value(), fn));
    return out;
  }
  return v;
}

int64_t total_bytes(const std::vector<at::Tensor>& ts) {
  int64_t b = 0;
  for (const at::Tensor& t : ts)
    if (t.defined()) b += static_cast<int64_t>(t.nbytes());
  return b;
}

// The reference batch of the project's anchors (StreamPETR-like detection metadata):
// 16 samples x (6 camera dicts of 5 tensors + a gt dict of 3) = 528 tensors, 153,628 bytes.
c10::IValue reference_batch(const c10::Device& device) {
  struct Config {
    int64_t gt;
    std::array<int64_t, 6> per_camera;
  };
  static const Config configs[] = {{60, {30, 20, 40, 10, 50, 20}},
                                   {100, {60, 40, 30, 70, 20, 50}},
                                   {45, {10, 20, 10, 30, 20, 10}},
                                   {120, {80, 50, 60, 40, 70, 30}}};
  int64_t seed = 1;
  auto values = [&seed, &device](std::vector<int64_t> shape, at::ScalarType dtype) {
    int64_t numel = 1;
    for (const int64_t d : shape) numel *= d;
    at::Tensor t = at::arange(seed, seed + numel, at::kLong);
    seed += numel + 7;
    if (dtype == at::kBool) {
      t = t.remainder(2).to(at::kBool);
    } else if (dtype == at::kFloat) {
      t = t.to(at::kFloat).mul(0.25);
    } else {
      t = t.to(dtype);
    }
    return to_device(t.reshape(shape), device);
  };
  c10::impl::GenericList samples(c10::AnyType::get());
  for (int r = 0; r < 4; ++r) {
    for (const Config& config : configs) {
      c10::impl::GenericList cameras(c10::AnyType::get());
      for (const int64_t n : config.per_camera) {
        c10::impl::GenericDict cam(c10::StringType::get(), c10::TensorType::get());
        cam.insert(std::string("bounding_boxes"), values({n, 4}, at::kFloat));
        cam.insert(std::string("class_ids"), values({n}, at::kLong));
        cam.insert(std::string("active"), values({n}, at::kBool));
        cam.insert(std::string("depths"), values({n}, at::kFloat));
        cam.insert(std::string("proj_mat"), values({3, 4}, at::kFloat));
        cameras.push_back(cam);
      }
      c10::impl::GenericDict gt(c10::StringType::get(), c10::TensorType::get());
      gt.insert(std::string("bounding_boxes_3d"), values({config.gt, 7}, at::kFloat));
      gt.insert(std::string("class_ids"), values({config.gt}, at::kLong));
      gt.insert(std::string("active"), values({config.gt}, at::kBool));
      c10::impl::GenericDict sample(c10::StringType::get(), c10::AnyType::get());
      sample.insert(std::string("cams_gt"), cameras);
      sample.insert(std::string("gt_data"), gt);
      samples.push_back(sample);
    }
  }
  return samples;
}

// A batch of every container kind, dtype and layout the engine distinguishes, on `device`.
c10::IValue mixed_batch(const c10::Device& device) {
  c10::impl::GenericList small(c10::AnyType::get());
  int n = 1;
  for (const at::ScalarType dtype : all_dtypes()) {
    small.push_back(random_tensor(dtype, {n}, device));
    small.push_back(random_tensor(dtype, {2, (n % 5) + 1}, device));
    n += 3;
  }
  c10::impl::GenericDict layouts(c10::StringType::get(), c10::TensorType::get());
  layouts.insert(std::string("scalar"), random_tensor(at::kDouble, {}, device));
  layouts.insert(std::string("exactly_256KiB"), random_tensor(at::kFloat, {64 * 1024}, device));
  layouts.insert(std::string("over_256KiB"), random_tensor(at::kFloat, {64 * 1024 + 1}, device));
  layouts.insert(std::string("9MiB"), random_tensor(at::kByte, {9 * kMiB + 3}, device));
  layouts.insert(std::string("20MiB"), random_tensor(at::kInt, {5 * kMiB + 1}, device));
  layouts.insert(std::string("transposed_small"), random_tensor(at::kHalf, {5, 3}, device).t());
  layouts.insert(std::string("transposed_large"),
                 random_tensor(at::kFloat, {512, 300}, device).t());
  layouts.insert(std::string("channels_last"),
                 random_tensor(at::kFloat, {2, 8, 9, 3}, device).permute({0, 3, 1, 2}));
  layouts.insert(std::string("strided_small"),
                 random_tensor(at::kLong, {20}, device).slice(0, 0, 20, 2));
  layouts.insert(std::string("strided_large"),
                 random_tensor(at::kFloat, {1000, 300}, device).slice(0, 0, 1000, 2));
  layouts.insert(std::string("column"), random_tensor(at::kShort, {40, 6}, device).select(1, 2));
  layouts.insert(std::string("expanded"),
                 random_tensor(at::kFloat, {1, 7}, device).expand({300, 7}));
  layouts.insert(std::string("offset_view"),
                 random_tensor(at::kInt, {50}, device).narrow(0, 13, 9));
  layouts.insert(std::string("zero_size"),
                 at::empty({0}, at::TensorOptions().dtype(at::kFloat).device(device)));
  layouts.insert(std::string("zero_size_2d"),
                 at::empty({3, 0, 2}, at::TensorOptions().dtype(at::kLong).device(device)));
  c10::List<at::Tensor> typed;
  typed.push_back(random_tensor(at::kFloat, {4, 4}, device));
  typed.push_back(random_tensor(at::kBFloat16, {17}, device));
  c10::impl::GenericDict by_int(c10::IntType::get(), c10::AnyType::get());
  by_int.insert(int64_t{5}, random_tensor(at::kComplexFloat, {3}, device));
  by_int.insert(int64_t{-2}, std::string("label"));
  c10::impl::GenericList root(c10::AnyType::get());
  root.push_back(small);
  root.push_back(layouts);
  root.push_back(typed);
  root.push_back(by_int);
  root.push_back(c10::ivalue::Tuple::create({c10::IValue(at::Tensor()), c10::IValue(int64_t{3}),
                                             c10::IValue(2.5), c10::IValue(true), c10::IValue(),
                                             c10::IValue(std::string("text"))}));
  root.push_back(c10::impl::GenericList(c10::AnyType::get()));
  root.push_back(c10::impl::GenericDict(c10::StringType::get(), c10::TensorType::get()));
  return root;
}

// What the engine promises to pack for a copy to `target`.
int64_t expected_packed(const std::vector<at::Tensor>& ts, const c10::Device& target,
                        const CopyOptions& o) {
  if (!o.pack_cpu_tensors) return 0;
  int64_t n = 0;
  for (const at::Tensor& t : ts) {
    if (!t.defined() || t.device() == target) continue;
    const auto bytes = static_cast<int64_t>(t.nbytes());
    if (t.is_contiguous() && bytes >= 1 && bytes <= mtc::kMaxPackedTensorBytes &&
        bytes <= o.max_packed_chunk_bytes)
      ++n;
  }
  return n;
}

int64_t expected_reused(const std::vector<at::Tensor>& ts, const c10::Device& target) {
  int64_t n = 0;
  for (const at::Tensor& t : ts)
    if (!t.defined() || t.device() == target) ++n;
  return n;
}

// Conjugate and negative views of finite complex and real values on `device`: packed, one dense
// span, dense but permuted, and not dense.
c10::impl::GenericList math_bit_views(const c10::Device& device) {
  auto randn = [&device](std::vector<int64_t> sizes, at::ScalarType dtype) {
    return to_device(at::randn(sizes, dtype), device);
  };
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(randn({8}, at::kComplexFloat).conj());                          // packed
  list.push_back(randn({(1 * kMiB) / 16}, at::kComplexDouble).conj());           // dense span
  list.push_back(randn({8, 3}, at::kComplexFloat).t().conj());                   // dense, permuted
  list.push_back(randn({64, 64}, at::kComplexFloat).slice(1, 0, 64, 2).conj());  // non-dense
  list.push_back(at::imag(randn({300, 10}, at::kComplexFloat).conj()));  // neg bit, non-dense
  list.push_back(at::imag(randn({5}, at::kComplexDouble).conj()));  // neg bit, non-dense, small
  list.push_back(at::_neg_view(randn({33}, at::kFloat)));           // neg bit, packed
  return list;
}

int64_t expect_storages_back_to_back(const std::vector<at::Tensor>& outs, int64_t alignment) {
  std::map<uintptr_t, uintptr_t> storages;  // start -> end, by start
  for (const at::Tensor& t : outs) {
    const auto start = reinterpret_cast<uintptr_t>(t.storage().data());
    storages[start] = start + t.storage().nbytes();
  }
  if (storages.empty()) return 0;
  const uintptr_t block = storages.begin()->first;
  uintptr_t end = block;
  for (const auto& [start, storage_end] : storages) {
    const auto expected = static_cast<uintptr_t>(
        (end - block + static_cast<uintptr_t>(alignment) - 1) / alignment * alignment);
    EXPECT_EQ(start - block, expected) << "storages not back to back in one block";
    end = storage_end;
  }
  return static_cast<int64_t>(end - block);
}

int64_t pinned_in_use() { return mtc::pinned_pool_stats().in_use_bytes; }

int64_t device_allocated(c10::DeviceIndex device) {
  using c10::CachingDeviceAllocator::StatType;
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device)
      .allocated_bytes[static_cast<size_t>(StatType::AGGREGATE)]
      .current;
}

}  // namespace mtc::test
