#include "workload/summary.h"

#include <ATen/core/Tensor.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "mtc/copier.h"
#include "number_text.h"
#include "workload/detail/json_checks.h"
#include "workload/detail/tensor_spec.h"

namespace mtc::bench {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

// Bucket edges chosen around the engine's packing limit (256 KiB) and the tiny-tensor regime
// (<= 16 B) where per-tensor overhead dominates.
struct BucketEdges {
  int64_t min_bytes;
  int64_t max_bytes;
  const char* label;  // upper edges inclusive: "4-64 KiB" is 4 KiB + 1 .. 64 KiB
};
constexpr std::array<BucketEdges, 9> kBuckets{{
    {0, 0, "0 B"},
    {1, 16, "1-16 B"},
    {17, 256, "17-256 B"},
    {257, 4 * kKiB, "257 B-4 KiB"},
    {4 * kKiB + 1, 64 * kKiB, "4-64 KiB"},
    {64 * kKiB + 1, 256 * kKiB, "64-256 KiB"},
    {256 * kKiB + 1, kMiB, "256 KiB-1 MiB"},
    {kMiB + 1, 16 * kMiB, "1-16 MiB"},
    {16 * kMiB + 1, -1, "> 16 MiB"},
}};

std::string memory_kind(const at::Tensor& tensor) {
  if (tensor.is_cuda()) return fmt::format("cuda:{}", tensor.device().index());
  if (!tensor.is_cpu()) return tensor.device().str();
  // Asking whether memory is pinned needs a CUDA runtime; without one nothing is pinned.
  if (at::detail::getCUDAHooks().hasCUDA() && tensor.is_pinned()) return "pinned";
  return "pageable";
}

class Walker {
 public:
  explicit Walker(WorkloadSummary& summary) : summary_(summary) {}

  void walk(const c10::IValue& value, int64_t depth) {
    if (value.isTensor()) return tensor(value.toTensor(), depth);
    if (value.isTuple()) {
      container(depth);
      for (const auto& item : value.toTupleRef().elements()) walk(item, depth + 1);
    } else if (value.isList()) {
      container(depth);
      for (const auto& item : value.toListRef()) walk(item, depth + 1);
    } else if (value.isGenericDict()) {
      container(depth);
      for (const auto& entry : value.toGenericDict()) walk(entry.value(), depth + 1);
    } else {
      ++summary_.passthrough;
    }
  }

 private:
  void container(int64_t depth) {
    ++summary_.containers;
    summary_.max_depth = std::max(summary_.max_depth, depth + 1);
  }

  void tensor(const at::Tensor& t, int64_t depth) {
    summary_.max_depth = std::max(summary_.max_depth, depth);
    const int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
    summary_.smallest_bytes =
        summary_.tensors == 0 ? bytes : std::min(summary_.smallest_bytes, bytes);
    summary_.largest_bytes = std::max(summary_.largest_bytes, bytes);
    ++summary_.tensors;
    summary_.bytes += bytes;
    for (auto& bucket : summary_.size_histogram) {
      if (bytes >= bucket.min_bytes && (bucket.max_bytes < 0 || bytes <= bucket.max_bytes)) {
        ++bucket.tensors;
        bucket.bytes += bytes;
        break;
      }
    }
    auto& share = summary_.dtypes[detail::dtype_name(t.scalar_type())];
    ++share.tensors;
    share.bytes += bytes;
    const std::string memory = memory_kind(t);
    ++summary_.memory[memory];
    const bool contiguous = t.is_contiguous();
    if (!contiguous) ++summary_.non_contiguous;
    if (t.is_cpu() && contiguous && bytes >= kPackableMinBytes &&
        bytes <= mtc::kMaxPackedTensorBytes) {
      ++summary_.packable_tensors;
      summary_.packable_bytes += bytes;
    }
  }

  WorkloadSummary& summary_;
};

double fraction(int64_t part, int64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

double WorkloadSummary::packable_fraction() const { return fraction(packable_tensors, tensors); }

nlohmann::json WorkloadSummary::to_json() const {
  nlohmann::json out;
  out["tensors"] = tensors;
  out["bytes"] = bytes;
  out["passthrough"] = passthrough;
  out["containers"] = containers;
  out["max_depth"] = max_depth;
  out["smallest_bytes"] = smallest_bytes;
  out["largest_bytes"] = largest_bytes;
  out["non_contiguous"] = non_contiguous;
  out["packable"] = {{"tensors", packable_tensors},
                     {"bytes", packable_bytes},
                     {"fraction", packable_fraction()},
                     {"bytes_fraction", fraction(packable_bytes, bytes)}};
  out["size_histogram"] = nlohmann::json::array();
  for (const auto& b : size_histogram) {
    out["size_histogram"].push_back(
        {{"label", b.label},
         {"min_bytes", b.min_bytes},
         {"max_bytes", b.max_bytes < 0 ? nlohmann::json(nullptr) : nlohmann::json(b.max_bytes)},
         {"tensors", b.tensors},
         {"bytes", b.bytes}});
  }
  out["dtypes"] = nlohmann::json::object();
  for (const auto& [name, share] : dtypes)
    out["dtypes"][name] = {{"tensors", share.tensors}, {"bytes", share.bytes}};
  out["memory"] = memory;
  out["demoted"] = demoted;
  return out;
}

WorkloadSummary summarize_workload(const c10::IValue& data) {
  WorkloadSummary summary;
  for (const auto& b : kBuckets)
    summary.size_histogram.push_back({b.label, b.min_bytes, b.max_bytes, 0, 0});
  Walker(summary).walk(data, 0);
  return summary;
}

WorkloadSummary summarize_workload(const c10::IValue& data, const BuildInfo& info) {
  WorkloadSummary summary = summarize_workload(data);
  summary.demoted = info.demoted;
  return summary;
}

void print_summary(std::ostream& out, const WorkloadSummary& s) {
  out << fmt::format(
      "workload: {} tensors, {} bytes ({}), {} passthrough leaves, {} containers, depth {}\n",
      with_commas(s.tensors), with_commas(s.bytes), human_bytes(s.bytes),
      with_commas(s.passthrough), with_commas(s.containers), s.max_depth);
  if (s.tensors == 0) return;
  out << fmt::format("  tensor sizes: {} .. {} B, {} non-contiguous\n",
                     with_commas(s.smallest_bytes), with_commas(s.largest_bytes),
                     with_commas(s.non_contiguous));
  std::vector<std::string> buckets;
  for (const auto& b : s.size_histogram) {
    if (b.tensors > 0) buckets.push_back(fmt::format("{}: {}", b.label, with_commas(b.tensors)));
  }
  out << "  size histogram: " << detail::join(buckets, " | ") << "\n";
  std::vector<std::string> dtypes;
  for (const auto& [name, share] : s.dtypes) {
    dtypes.push_back(
        fmt::format("{} {} ({})", name, with_commas(share.tensors), human_bytes(share.bytes)));
  }
  out << "  dtypes: " << detail::join(dtypes) << "\n";
  out << fmt::format(
      "  packable (contiguous CPU, 1 B..256 KiB): {} of {} tensors ({:.1f}%), {} of {} bytes "
      "({:.1f}%)\n",
      with_commas(s.packable_tensors), with_commas(s.tensors), 100.0 * s.packable_fraction(),
      with_commas(s.packable_bytes), with_commas(s.bytes),
      100.0 * fraction(s.packable_bytes, s.bytes));
  std::vector<std::string> kinds;
  for (const auto& [name, count] : s.memory)
    kinds.push_back(fmt::format("{} {}", name, with_commas(count)));
  out << "  memory: " << detail::join(kinds) << "\n";
  for (const auto& [requested, count] : s.demoted) {
    out << fmt::format(
        "  note: {} tensors asked for {} memory and were built pageable (no CUDA device)\n",
        with_commas(count), requested);
  }
}

}  // namespace mtc::bench
