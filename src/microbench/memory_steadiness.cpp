// Whether the engine's memory levels off in a training loop: copies of the reference batch
// (configs/streampetr.json's, built in code) in the step pattern, a rotation of 8 distinct
// batches with the previous result freed once the next copy has started. Every EVERY copies it
// prints a row: the pinned pool's size, its peak in flight and its allocations so far, device
// memory allocated and reserved (the CUDA caching allocator) and the process's resident memory
// (/proc/self/statm). Levelled off means the second half of the run added nothing: no pinned or
// device memory, no pinned allocation, and at most 16 MiB of resident memory (malloc's arenas
// may still settle). Device memory allocated is read with no result held: the copy's result (and
// its handle) before each reading is dropped first (the next copy then has none to free). Counting
// the blocks of a held result instead fell short by an amount that changed from copy to copy: a
// CPU->GPU result's chunks differ in size with the walk's split, and a chunk placed in a block
// kept for it sits in a larger block than its storage says. Nor is the device memory the engine
// keeps for the next copy's chunks counted (device_block_stash.h: a worker replaces it after each
// copy): each reading waits 5 ms for that worker (the kept bytes are printed; the engine bounds
// them). The program exits 1 otherwise, 2 for bad arguments, and 0 without a GPU (saying it
// skipped).
//
//   mtc_memory_steadiness [COPIES [EVERY [h2d|d2h]]]    (defaults: 100000 10000 h2d)
#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "detail/device_block_stash.h"
#include "mtc/copier.h"
#include "reference_batch.h"

namespace {

constexpr int kRotation = 8;
constexpr int64_t kResidentSlackBytes = 16 << 20;

struct Reading {
  int64_t copies = 0;
  double seconds = 0;
  mtc::PinnedPoolStats pinned;
  int64_t device_allocated = 0;
  int64_t device_kept = 0;  // of device_allocated, the blocks kept for the next copy
  int64_t device_reserved = 0;
  int64_t resident = 0;
};

int64_t resident_bytes() {
  long pages = 0;
  long resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

Reading read(int64_t copies, double seconds) {
  using c10::CachingDeviceAllocator::StatType;
  // The worker that ran the last copy's job is still replacing the blocks kept for the next.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto device = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  const auto all = static_cast<size_t>(StatType::AGGREGATE);
  return {copies,
          seconds,
          mtc::pinned_pool_stats(),
          device.allocated_bytes[all].current,
          mtc::detail::device_block_stash::kept(0).bytes,
          device.reserved_bytes[all].current,
          resident_bytes()};
}

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

void print_row(const Reading& r) {
  std::printf("| %9lld | %7.1f | %13.2f | %14.2f | %16lld | %13.2f | %12.2f | %8.1f |\n",
              static_cast<long long>(r.copies), r.seconds, mib(r.pinned.reserved_bytes),
              mib(r.pinned.peak_in_use_bytes), static_cast<long long>(r.pinned.slab_allocations),
              mib(r.device_allocated), mib(r.device_reserved), mib(r.resident));
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t copies = argc > 1 ? std::atoll(argv[1]) : 100000;
  const int64_t every = argc > 2 ? std::atoll(argv[2]) : 10000;
  const std::string direction = argc > 3 ? argv[3] : "h2d";
  if (copies < 2 || every < 1 || (direction != "h2d" && direction != "d2h")) {
    std::fprintf(stderr, "usage: %s [COPIES >= 2 [EVERY >= 1 [h2d|d2h]]]\n", argv[0]);
    return 2;
  }
  if (!mtc::microbench::has_gpu()) {
    std::printf("no CUDA device: memory steadiness not measured (skipped)\n");
    return 0;
  }
  // The caching allocator's statistics exist once torch has set CUDA up, which it does lazily:
  // the first row is read before the h2d run has made a CUDA tensor.
  at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
  const bool h2d = direction == "h2d";
  const c10::Device target = h2d ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  std::vector<c10::IValue> batches;
  for (int i = 0; i < kRotation; ++i) {
    const c10::IValue fresh = mtc::microbench::make_reference_batch(1);
    batches.push_back(h2d ? fresh : mtc::microbench::map_to(fresh, c10::Device(c10::kCUDA, 0)));
  }
  std::printf(
      "%s, reference batch (528 tensors), rotation of %d, previous result freed in the next "
      "copy\n\n",
      direction.c_str(), kRotation);
  std::printf(
      "| copies    | s       | pinned MiB    | peak in flight | pinned allocs    | device alloc  | "
      "device resvd | RSS MiB  |\n");
  std::printf(
      "|-----------|---------|---------------|----------------|------------------|---------------|-"
      "-------------|----------|\n");
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<Reading> readings{read(0, 0)};
  print_row(readings.back());
  Reading half;
  c10::IValue previous;
  for (int64_t n = 1; n <= copies; ++n) {
    {
      // The handle dies before a reading: its copy's job holds the chunks its result lies in.
      mtc::CopyHandle handle = mtc::start_copy(batches[static_cast<size_t>(n % kRotation)], target);
      previous = c10::IValue();  // the last step's batch is dropped while this one is copied
      previous = handle.get();
    }
    const bool row = n % every == 0 || n == copies;
    if (!row && n != copies / 2) continue;
    previous = c10::IValue();  // read with no result held (above)
    const Reading reading = read(n, seconds());
    if (n == copies / 2) half = reading;
    if (row) {
      readings.push_back(reading);
      print_row(reading);
    }
  }
  const Reading& end = readings.back();
  std::printf("\n%.0f copies/s\n", static_cast<double>(copies) / end.seconds);
  struct Check {
    const char* what;
    int64_t grew;
    int64_t allowed;
  };
  const Check checks[] = {
      {"pinned pool size", end.pinned.reserved_bytes - half.pinned.reserved_bytes, 0},
      {"pinned allocations", end.pinned.slab_allocations - half.pinned.slab_allocations, 0},
      {"device memory reserved", end.device_reserved - half.device_reserved, 0},
      {"device memory allocated",
       (end.device_allocated - end.device_kept) - (half.device_allocated - half.device_kept), 0},
      {"resident memory", end.resident - half.resident, kResidentSlackBytes},
  };
  bool levelled = true;
  for (const Check& c : checks) {
    const bool ok = c.grew <= c.allowed;
    levelled = levelled && ok;
    std::printf("%-24s grew by %lld bytes over the second half (allowed %lld): %s\n", c.what,
                static_cast<long long>(c.grew), static_cast<long long>(c.allowed),
                ok ? "ok" : "GREW");
  }
  std::printf(
      "(device memory allocated is read with no result held, and counted without the blocks "
      "kept for the next copy: %lld bytes at the half, %lld at the end)\n",
      static_cast<long long>(half.device_kept), static_cast<long long>(end.device_kept));
  std::printf("levelled off: %s\n", levelled ? "yes" : "no");
  return levelled ? 0 : 1;
}
