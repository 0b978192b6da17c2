// Randomized differential test: random nested structures copied by the engine and by a
// per-tensor `.to()` rebuild must agree, structure and bits. Every case is drawn from its own
// seed, printed when the case fails, so one failing case can be rerun alone.
//   MTC_DIFFERENTIAL_CASES=N   cases per target (default 300, what CI runs)
//   MTC_DIFFERENTIAL_SEED=S    the first case's seed (default 1); case i uses S + i
// On a machine without a GPU the target is the CPU (new containers, the same tensors); with
// one, CPU->GPU (pageable and pinned inputs), GPU->CPU and, with two, GPU->GPU follow.
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAFunctions.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "mtc/copier.h"
#include "structure_compare.h"

namespace {

using mtc::CopyOptions;

int64_t env_int(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::strtoll(text, nullptr, 10) : fallback;
}

constexpr c10::ScalarType kDtypes[] = {
    c10::kBool, c10::kByte,     c10::kChar,  c10::kShort,  c10::kInt,          c10::kLong,
    c10::kHalf, c10::kBFloat16, c10::kFloat, c10::kDouble, c10::kComplexFloat, c10::kComplexDouble};

// Draws one structure and the options to copy it with.
class CaseGenerator {
 public:
  explicit CaseGenerator(uint64_t seed) : rng_(seed) {}

  c10::IValue structure() { return node(0); }

  CopyOptions options() {
    CopyOptions o;
    o.use_pinned_staging = coin();
    o.pack_cpu_tensors = below(4) != 0;
    const int64_t alignments[] = {1, 2, 3, 7, 16, 64, 100};
    o.min_packed_alignment_bytes = alignments[below(7)];
    const int64_t chunks[] = {1, 7, 64, 4096, 1 << 20, 32 << 20};
    o.max_packed_chunk_bytes = chunks[below(6)];
    o.use_background_thread = below(4) != 0;
    return o;
  }

 private:
  uint64_t below(uint64_t n) { return rng_() % n; }
  bool coin() { return (rng_() & 1) != 0; }

  c10::IValue node(int depth) {
    // Deeper means more leaves; a few roots get many elements, so the engine's split walk runs.
    const uint64_t kind = depth >= 4 ? 6 + below(4) : below(10);
    const int64_t width = depth == 0 && below(8) == 0 ? 200 + static_cast<int64_t>(below(200))
                                                      : static_cast<int64_t>(below(6));
    switch (kind) {
      case 0: {
        c10::impl::GenericList list(c10::AnyType::get());
        for (int64_t i = 0; i < width; ++i) list.push_back(node(depth + 1));
        return list;
      }
      case 1: {
        c10::List<at::Tensor> list;
        for (int64_t i = 0; i < width; ++i) list.push_back(tensor());
        return list;
      }
      case 2: {
        std::vector<c10::IValue> items;
        for (int64_t i = 0; i < width; ++i) items.push_back(node(depth + 1));
        return c10::ivalue::Tuple::create(std::move(items));
      }
      case 3: {
        c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
        for (int64_t i = 0; i < width; ++i)
          dict.insert_or_assign("k" + std::to_string(below(1000)), node(depth + 1));
        return dict;
      }
      case 4: {
        c10::impl::GenericDict dict(c10::IntType::get(), c10::AnyType::get());
        for (int64_t i = 0; i < width; ++i)
          dict.insert_or_assign(static_cast<int64_t>(below(1000)) - 500, node(depth + 1));
        return dict;
      }
      case 5: {
        c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
        for (int64_t i = 0; i < width; ++i)
          dict.insert_or_assign("t" + std::to_string(i), tensor());
        return dict;
      }
      case 6:
        return passthrough();
      default:
        return tensor();
    }
  }

  c10::IValue passthrough() {
    switch (below(5)) {
      case 0:
        return c10::IValue(static_cast<int64_t>(rng_()));
      case 1:
        return c10::IValue(static_cast<double>(below(1000)) / 7.0);
      case 2:
        return c10::IValue(std::string("s") + std::to_string(below(100)));
      case 3:
        return c10::IValue(coin());
      default:
        return c10::IValue();
    }
  }

  at::Tensor tensor() {
    const c10::ScalarType dtype = kDtypes[below(std::size(kDtypes))];
    std::vector<int64_t> shape;
    const uint64_t size_class = below(20);
    if (size_class == 0) {
      shape = {static_cast<int64_t>(below(3)), 0, 4};  // zero-size
    } else if (size_class == 1) {
      shape = {(300 << 10) / static_cast<int64_t>(c10::elementSize(dtype)) +
               static_cast<int64_t>(below(64))};  // > 256 KiB
    } else {
      const uint64_t rank = below(4);
      for (uint64_t d = 0; d < rank; ++d) shape.push_back(1 + static_cast<int64_t>(below(9)));
    }
    at::Tensor t = random_values(shape, dtype);
    // Non-contiguous views of a few of them.
    if (t.dim() >= 2 && below(5) == 0) t = t.transpose(0, t.dim() - 1);
    if (t.dim() >= 1 && t.size(0) > 2 && below(5) == 0) t = t.slice(0, 1, t.size(0), 2);
    if (t.dim() == 1 && below(10) == 0) t = t.unsqueeze(0).expand({3, t.size(0)});  // stride 0
    return t;
  }

  // Random bits (any byte pattern, NaNs included) except for bool, which must hold 0 or 1.
  at::Tensor random_values(const std::vector<int64_t>& shape, c10::ScalarType dtype) {
    const auto gen_seed = static_cast<int64_t>(rng_() >> 1);
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(dtype));
    if (t.numel() == 0) return t;
    std::mt19937_64 fill(static_cast<uint64_t>(gen_seed));
    auto* bytes = static_cast<unsigned char*>(t.data_ptr());
    for (size_t i = 0; i < t.nbytes(); ++i) {
      bytes[i] = dtype == c10::kBool ? static_cast<unsigned char>(fill() & 1)
                                     : static_cast<unsigned char>(fill());
    }
    return t;
  }

  std::mt19937_64 rng_;
};

// Same dtype, shape and device as the reference; the same bytes in logical order.
void expect_bitwise_equal(const at::Tensor& out, const at::Tensor& ref) {
  ASSERT_EQ(out.scalar_type(), ref.scalar_type());
  ASSERT_EQ(out.sizes(), ref.sizes());
  ASSERT_EQ(out.device(), ref.device());
  const at::Tensor a = out.cpu().contiguous();
  const at::Tensor b = ref.cpu().contiguous();
  ASSERT_EQ(a.nbytes(), b.nbytes());
  if (a.nbytes() > 0) {
    EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()), 0) << "values differ";
  }
}

struct Target {
  std::string name;
  c10::Device source;
  c10::Device target;
  bool pinned = false;
};

std::vector<Target> targets() {
  const c10::Device cpu(c10::kCPU);
  std::vector<Target> out{{"h2h", cpu, cpu}};
  const int gpus = c10::cuda::device_count();
  if (gpus >= 1) {
    const c10::Device gpu0(c10::kCUDA, 0);
    out.push_back({"h2d", cpu, gpu0});
    out.push_back({"h2d pinned", cpu, gpu0, true});
    out.push_back({"d2h", gpu0, cpu});
  }
  if (gpus >= 2) out.push_back({"d2d", c10::Device(c10::kCUDA, 0), c10::Device(c10::kCUDA, 1)});
  return out;
}

// Moves every tensor of `v` (rebuilding the containers) with per-tensor .to(): the reference.
c10::IValue to_each(const c10::IValue& v, const c10::Device& device, bool pin) {
  if (v.isTensor()) {
    at::Tensor t = v.toTensor().to(device);
    return pin && device.is_cpu() ? t.pin_memory() : t;
  }
  if (v.isList()) {
    c10::impl::GenericList list(v.toList().elementType());
    for (const c10::IValue& e : v.toListRef()) list.push_back(to_each(e, device, pin));
    return list;
  }
  if (v.isTuple()) {
    std::vector<c10::IValue> items;
    for (const c10::IValue& e : v.toTupleRef().elements()) items.push_back(to_each(e, device, pin));
    return c10::ivalue::Tuple::create(std::move(items));
  }
  if (v.isGenericDict()) {
    const c10::impl::GenericDict in = v.toGenericDict();
    c10::impl::GenericDict dict(in.keyType(), in.valueType());
    for (const auto& e : in) dict.insert(e.key(), to_each(e.value(), device, pin));
    return dict;
  }
  return v;
}

TEST(CopierDifferential, RandomStructuresMatchPerTensorTo) {
  const int64_t cases = env_int("MTC_DIFFERENTIAL_CASES", 300);
  const auto first_seed = static_cast<uint64_t>(env_int("MTC_DIFFERENTIAL_SEED", 1));
  const std::vector<Target> routes = targets();
  if (routes.size() == 1) std::cout << "[          ] no CUDA device: the CPU->CPU route only\n";
  int64_t leaves = 0;
  for (const Target& route : routes) {
    for (int64_t i = 0; i < cases; ++i) {
      const uint64_t seed = first_seed + static_cast<uint64_t>(i);
      SCOPED_TRACE(::testing::Message() << route.name << ", seed " << seed
                                        << " (rerun alone: MTC_DIFFERENTIAL_SEED=" << seed
                                        << " MTC_DIFFERENTIAL_CASES=1)");
      CaseGenerator generate(seed);
      const c10::IValue built = generate.structure();
      const CopyOptions options = generate.options();
      const c10::IValue input = to_each(built, route.source, route.pinned);
      const c10::IValue out = mtc::start_copy(input, route.target, options).get();
      const c10::IValue ref = to_each(input, route.target, false);
      const std::vector<at::Tensor> refs = mtc::test::tensors_of(ref);
      leaves += static_cast<int64_t>(mtc::test::expect_same_structure(
          out, input, [&](const at::Tensor& o, const at::Tensor& in, size_t leaf) {
            expect_bitwise_equal(o, refs.at(leaf));
            // Already on the target: returned as it is, as .to() would.
            if (in.device() == route.target) {
              EXPECT_TRUE(o.is_same(in)) << "leaf " << leaf << " was copied";
            }
          }));
      if (::testing::Test::HasFailure()) return;  // the first failing case is the one to look at
    }
  }
  std::cout << "[          ] " << cases << " cases per route, " << routes.size() << " routes, "
            << leaves << " tensor leaves compared\n";
}

}  // namespace
