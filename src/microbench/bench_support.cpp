#include "bench_support.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "reference_batch.h"

namespace mtc::microbench {

bool has_gpu() { return c10::cuda::device_count() > 0; }

namespace {
void collect_leaves(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isList()) {
    for (const auto& item : v.toListRef()) collect_leaves(item, out);
  } else if (v.isTuple()) {
    for (const auto& item : v.toTupleRef().elements()) collect_leaves(item, out);
  } else if (v.isGenericDict()) {
    for (const auto& e : v.toGenericDict()) collect_leaves(e.value(), out);
  }
}
}  // namespace

std::vector<at::Tensor> tensor_leaves(const c10::IValue& v) {
  std::vector<at::Tensor> out;
  collect_leaves(v, out);
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double pinned_copy_gbps(int64_t bytes) {
  const at::Tensor host =
      at::empty({bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
  const at::Tensor device =
      at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, 0));
  std::vector<double> seconds;
  for (int i = 0; i < 7; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    cudaMemcpy(device.data_ptr(), host.const_data_ptr(), static_cast<size_t>(bytes),
               cudaMemcpyHostToDevice);
    seconds.push_back(seconds_since(t0));
  }
  return static_cast<double>(bytes) / median_of(seconds) / 1e9;
}

const std::vector<c10::IValue>& rotation(int repeat, bool on_gpu) {
  static std::map<std::pair<int, bool>, std::vector<c10::IValue>> cache;
  std::vector<c10::IValue>& batches = cache[{repeat, on_gpu}];
  while (batches.size() < 8) {
    const c10::IValue fresh = make_reference_batch(repeat);
    batches.push_back(on_gpu ? map_to(fresh, c10::Device(c10::kCUDA, 0)) : fresh);
  }
  return batches;
}

void spin_gap(std::chrono::microseconds duration) {
  const auto deadline = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < deadline) {
  }
}

void busy_gap(std::chrono::microseconds duration) {
  constexpr size_t kBytes = size_t{32} << 20;
  constexpr size_t kLine = 64;
  thread_local std::unique_ptr<unsigned char[]> buffer(new unsigned char[kBytes]());
  thread_local size_t next = 0;
  volatile unsigned char* bytes = buffer.get();
  const auto deadline = std::chrono::steady_clock::now() + duration;
  do {
    for (int i = 0; i < 64; ++i) {  // 4 KiB between looks at the clock
      bytes[next] = static_cast<unsigned char>(bytes[next] + 1);
      next = (next + kLine) % kBytes;
    }
  } while (std::chrono::steady_clock::now() < deadline);
}

c10::IValue map_to(const c10::IValue& v, const c10::Device& device) {
  if (v.isTensor()) return v.toTensor().to(device);
  if (v.isList()) {
    c10::impl::GenericList out(v.toList().elementType());
    for (const auto& item : v.toListRef()) out.push_back(map_to(item, device));
    return out;
  }
  if (v.isGenericDict()) {
    const auto dict = v.toGenericDict();
    c10::impl::GenericDict out(dict.keyType(), dict.valueType());
    for (const auto& e : dict) out.insert(e.key(), map_to(e.value(), device));
    return out;
  }
  if (v.isTuple()) {
    std::vector<c10::IValue> items;
    for (const auto& item : v.toTupleRef().elements()) items.push_back(map_to(item, device));
    return c10::ivalue::Tuple::create(std::move(items));
  }
  return v;
}

double median_of(std::vector<double>& seconds) {
  if (seconds.empty()) return 0;
  const auto mid = seconds.begin() + static_cast<std::ptrdiff_t>(seconds.size() / 2);
  std::nth_element(seconds.begin(), mid, seconds.end());
  return *mid;
}

void report_median(benchmark::State& state, std::vector<double>& seconds) {
  if (seconds.empty()) return;
  state.counters["median_us"] = median_of(seconds) * 1e6;
}

namespace {
// The fields StatsSum reports, added into `sum`: one list for add() and merge().
void add_timings(mtc::CopyStats& sum, const mtc::CopyStats& stats) {
  sum.queued_us += stats.queued_us;
  sum.traverse_us += stats.traverse_us;
  sum.submit_us += stats.submit_us;
  sum.outputs_us += stats.outputs_us;
  sum.allocate_us += stats.allocate_us;
  sum.driver_us += stats.driver_us;
  sum.split_wait_us += stats.split_wait_us;
  sum.split_queue_us += stats.split_queue_us;
  sum.split_join_us += stats.split_join_us;
  sum.split_leaf_ns += stats.split_leaf_ns;
  sum.split_stage_us += stats.split_stage_us;
  sum.walk_threads += stats.walk_threads;
  sum.recycled += stats.recycled;
}
}  // namespace

void StatsSum::add(const mtc::CopyStats& stats, double start_seconds) {
  add_timings(sum_, stats);
  start_seconds_ += start_seconds;
  ++copies_;
}

void StatsSum::merge(const StatsSum& other) {
  add_timings(sum_, other.sum_);
  start_seconds_ += other.start_seconds_;
  copies_ += other.copies_;
}

void StatsSum::report(benchmark::State& state) const {
  if (copies_ == 0) return;
  const auto n = static_cast<double>(copies_);
  state.counters["start_us"] = start_seconds_ * 1e6 / n;
  state.counters["queued_us"] = sum_.queued_us / n;
  state.counters["traverse_us"] = sum_.traverse_us / n;
  state.counters["submit_us"] = sum_.submit_us / n;
  state.counters["outputs_us"] = sum_.outputs_us / n;
  state.counters["allocate_us"] = sum_.allocate_us / n;
  state.counters["driver_us"] = sum_.driver_us / n;
  state.counters["walk_threads"] = static_cast<double>(sum_.walk_threads) / n;
  // A split walk's parts (CopyStats), means over the copies, unsplit ones counting 0.
  state.counters["split_wait_us"] = sum_.split_wait_us / n;
  state.counters["split_queue_us"] = sum_.split_queue_us / n;
  state.counters["split_join_us"] = sum_.split_join_us / n;
  state.counters["split_leaf_ns"] = sum_.split_leaf_ns / n;
  state.counters["split_stage_us"] = sum_.split_stage_us / n;
  // Only where outputs were offered (ReusableOutputs): the other cases keep their columns.
  if (sum_.recycled > 0) state.counters["recycled"] = static_cast<double>(sum_.recycled) / n;
}

}  // namespace mtc::microbench
