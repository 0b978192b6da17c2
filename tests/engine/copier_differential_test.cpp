// Randomized differential test: random nested structures copied by the engine and by a
// per-tensor `.to()` rebuild must agree, structure and bits. Every case is drawn from its own
// seed, printed when the case fails, so one failing case can be rerun alone.
//   MTC_DIFFERENTIAL_CASES=N   cases per route (default 300, what CI runs; the GPU host's
//                              reliability check runs 2500, 10,000 or more on GPU routes)
//   MTC_DIFFERENTIAL_SEED=S    the first case's seed (default 1); case i uses S + i
//   MTC_DIFFERENTIAL_SECONDS=T past T seconds (default 600) the test prints each route's case
//                              and aborts: a hang then names where each route was
// Routes: CPU->CPU (new containers, the same tensors) everywhere; with a GPU, CPU->GPU from
// pageable and from pinned tensors, GPU->CPU, and a mixed route whose leaves each sit on the
// CPU (pageable or pinned) or on any GPU, copied to the CPU or any GPU drawn per case (leaves
// already on the target come back as they are); with two GPUs, GPU0->GPU1 and GPU1->GPU0 too.
// Each route runs on a thread of its own, so the routes' cases run side by side.
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAFunctions.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "structure_compare.h"
#include "watchdog.h"

namespace {

using mtc::CopyOptions;
using mtc::test::map_tensors;

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
    o.pinned_host_outputs = below(4) == 0;
    return o;
  }

 private:
  uint64_t below(uint64_t n) { return rng_() % n; }
  bool coin() { return (rng_() & 1) != 0; }
  // Appended rather than `"k" + std::to_string(n)`, which trips GCC 12's -Wrestrict false
  // positive at -O3.
  static std::string key(char prefix, uint64_t n) {
    std::string k(1, prefix);
    k += std::to_string(n);
    return k;
  }

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
          dict.insert_or_assign(key('k', below(1000)), node(depth + 1));
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
          dict.insert_or_assign(key('t', static_cast<uint64_t>(i)), tensor());
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
    // SplitMix64: seeding a Mersenne twister per tensor and drawing a byte at a time took most of
    // a case's time.
    uint64_t state = static_cast<uint64_t>(gen_seed);
    auto fill = [&state] {
      uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      return z ^ (z >> 31);
    };
    auto* bytes = static_cast<unsigned char*>(t.data_ptr());
    const size_t n = t.nbytes();
    if (dtype == c10::kBool) {
      for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(fill() & 1);
      return t;
    }
    for (size_t i = 0; i < n; i += sizeof(uint64_t)) {
      const uint64_t word = fill();
      std::memcpy(bytes + i, &word, std::min(sizeof(word), n - i));
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

// Where a case's tensors live and where they go. A route with several placements draws one per
// leaf, one with several targets one per case; both from the case's seed.
struct Placement {
  c10::Device device;
  bool pinned = false;
};

struct Route {
  std::string name;
  std::vector<Placement> sources;
  std::vector<c10::Device> targets;
};

std::vector<Route> routes() {
  const c10::Device cpu(c10::kCPU);
  std::vector<Route> out{{"h2h", {{cpu}}, {cpu}}};
  const int gpus = c10::cuda::device_count();
  if (gpus == 0) return out;
  const c10::Device gpu0(c10::kCUDA, 0);
  out.push_back({"h2d", {{cpu}}, {gpu0}});
  out.push_back({"h2d pinned", {{cpu, true}}, {gpu0}});
  out.push_back({"d2h", {{gpu0}}, {cpu}});
  Route mixed{"mixed", {{cpu}, {cpu, true}}, {cpu}};
  for (int d = 0; d < std::min(gpus, 2); ++d) {
    const c10::Device gpu(c10::kCUDA, static_cast<c10::DeviceIndex>(d));
    mixed.sources.push_back({gpu});
    mixed.targets.push_back(gpu);
  }
  out.push_back(mixed);
  if (gpus >= 2) {
    const c10::Device gpu1(c10::kCUDA, 1);
    out.push_back({"d2d 0->1", {{gpu0}}, {gpu1}});
    out.push_back({"d2d 1->0", {{gpu1}}, {gpu0}});
  }
  return out;
}

struct RouteTally {
  int64_t cases = 0;
  int64_t leaves = 0;
};

// `t` (on the CPU) in pinned memory, viewed as it is: the same sizes, strides and offset over a
// pinned copy of its whole storage. pin_memory() would copy into a tensor of t's layout, which
// torch refuses for views whose elements share memory (expanded ones).
at::Tensor pinned_view(const at::Tensor& t) {
  const c10::Storage& storage = t.storage();
  const auto bytes = static_cast<int64_t>(storage.nbytes());
  at::Tensor pinned = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
  if (bytes > 0) std::memcpy(pinned.data_ptr(), storage.data(), static_cast<size_t>(bytes));
  return at::empty({0}, t.options())
      .set_(pinned.storage(), t.storage_offset(), t.sizes(), t.strides());
}

// One case of a route: the structure of `seed`, placed as the route says, copied by the engine
// and compared with per-tensor .to().
void run_case(const Route& route, uint64_t seed, RouteTally& tally) {
  SCOPED_TRACE(::testing::Message()
               << route.name << ", seed " << seed << " (rerun alone: MTC_DIFFERENTIAL_SEED=" << seed
               << " MTC_DIFFERENTIAL_CASES=1)");
  CaseGenerator generate(seed);
  const c10::IValue built = generate.structure();
  const CopyOptions options = generate.options();
  // Its own stream of draws, so a seed's structure is the same on every route.
  std::mt19937_64 where(seed ^ 0x9e3779b97f4a7c15ULL);
  const c10::Device target = route.targets[where() % route.targets.size()];
  const c10::IValue input = map_tensors(built, [&](const at::Tensor& t) {
    const Placement& p = route.sources[where() % route.sources.size()];
    const at::Tensor placed = t.to(p.device);
    return p.pinned ? pinned_view(placed) : placed;
  });
  const c10::IValue out = mtc::start_copy(input, target, options).get();
  const c10::IValue ref = map_tensors(input, [&](const at::Tensor& t) { return t.to(target); });
  const std::vector<at::Tensor> refs = mtc::test::tensors_of(ref);
  tally.leaves += static_cast<int64_t>(mtc::test::expect_same_structure(
      out, input, [&](const at::Tensor& o, const at::Tensor& in, size_t leaf) {
        expect_bitwise_equal(o, refs.at(leaf));
        // Already on the target: returned as it is, as .to() would.
        if (in.device() == target) {
          EXPECT_TRUE(o.is_same(in)) << "leaf " << leaf << " was copied";
        }
      }));
  ++tally.cases;
}

// The route's cases, one after another; stops at the first failing case (of any route).
// `current` is the seed of the case under way (for the watchdog).
RouteTally run_route(const Route& route, int64_t cases, uint64_t first_seed,
                     std::atomic<uint64_t>& current) {
  RouteTally tally;
  for (int64_t i = 0; i < cases && !::testing::Test::HasFailure(); ++i) {
    const uint64_t seed = first_seed + static_cast<uint64_t>(i);
    current.store(seed, std::memory_order_relaxed);
    // An exception escaping a route's thread would end the process without naming the case.
    try {
      run_case(route, seed, tally);
    } catch (const std::exception& e) {
      ADD_FAILURE() << route.name << ", seed " << seed
                    << " (rerun alone: MTC_DIFFERENTIAL_SEED=" << seed
                    << " MTC_DIFFERENTIAL_CASES=1) threw: " << e.what();
    }
  }
  return tally;
}

TEST(CopierDifferential, RandomStructuresMatchPerTensorTo) {
  const int64_t cases = env_int("MTC_DIFFERENTIAL_CASES", 300);
  const auto first_seed = static_cast<uint64_t>(env_int("MTC_DIFFERENTIAL_SEED", 1));
  const std::vector<Route> all = routes();
  if (all.size() == 1) std::cout << "[          ] no CUDA device: the CPU->CPU route only\n";
  const auto start = std::chrono::steady_clock::now();
  std::vector<RouteTally> tallies(all.size());
  std::vector<std::atomic<uint64_t>> current(all.size());
  const mtc::test::Watchdog watchdog(
      std::chrono::seconds(env_int("MTC_DIFFERENTIAL_SECONDS", 600)), "the differential test", [&] {
        std::string where =
            "seed under way per route (rerun one alone with MTC_DIFFERENTIAL_SEED):";
        for (size_t r = 0; r < all.size(); ++r)
          where += " " + all[r].name + " " + std::to_string(current[r].load());
        return where;
      });
  std::vector<std::thread> threads;
  for (size_t r = 0; r < all.size(); ++r)
    threads.emplace_back([&, r] { tallies[r] = run_route(all[r], cases, first_seed, current[r]); });
  for (std::thread& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int64_t total = 0;
  int64_t gpu_cases = 0;
  for (size_t r = 0; r < all.size(); ++r) {
    std::cout << "[          ] " << all[r].name << ": " << tallies[r].cases << " cases, "
              << tallies[r].leaves << " tensor leaves compared\n";
    total += tallies[r].cases;
    if (all[r].name != "h2h") gpu_cases += tallies[r].cases;
  }
  std::cout << "[          ] " << total << " cases (" << gpu_cases << " on GPU routes) in "
            << seconds << " s, " << all.size() << " routes side by side\n";
}

}  // namespace
