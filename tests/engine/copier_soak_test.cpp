// Soak: 8 threads, each issuing many copies in mixed directions (CPU->GPU, GPU->CPU, GPU->GPU
// across two GPUs where present, CPU->CPU), with many handles in flight at once. Some handles
// are dropped unfinished, some are collected by another thread than the one that started the
// copy, some through ready() polling; some copies fail on purpose (an invalid option, a sparse
// leaf, a device allocation larger than the GPU). Every result is verified bit for bit, every
// failure must be the expected one, a watchdog turns a deadlock into a failure, and afterwards
// the worker pool must still copy and no pinned staging may be held.
//   MTC_SOAK_COPIES=N    copies per thread (default 40; the GPU host's soak run uses 1000)
//   MTC_SOAK_SEED=S      seed of the threads' draws (default 1)
//   MTC_SOAK_SECONDS=T   the watchdog's limit (default 300)
// The figures (copies/s, failures expected and seen, ...) are printed at the end. Without a GPU
// only CPU->CPU copies run (the threads, handles and failures are exercised all the same).
#include <ATen/core/List.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sparse_coo_tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "structure_compare.h"
#include "watchdog.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::start_copy;
using mtc::test::kCpu;
using mtc::test::kMiB;

constexpr int kThreads = 8;

int64_t env_int(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::strtoll(text, nullptr, 10) : fallback;
}

// A tensor leaf's bytes in logical order, all leaves one after another: one comparison per copy
// (gathered on the output's device, then brought to the host once).
at::Tensor fingerprint(const c10::IValue& v) {
  std::vector<at::Tensor> parts;
  for (const at::Tensor& t : mtc::test::tensors_of(v))
    if (t.defined()) parts.push_back(t.contiguous().reshape({-1}).view(at::kByte));
  if (parts.empty()) return at::zeros({0}, at::kByte);
  return at::cat(parts).cpu();
}

// An input the threads copy, on one device, with the bytes every copy of it must have.
struct Input {
  c10::IValue data;
  c10::Device device;
  at::Tensor expected;
};

enum class Failure { kNone, kInvalidOption, kUnsupportedLeaf, kDeviceOutOfMemory };

const char* fragment_of(Failure f) {
  switch (f) {
    case Failure::kInvalidOption:
      return "min_packed_alignment_bytes";
    case Failure::kUnsupportedLeaf:
      return "layout";
    case Failure::kDeviceOutOfMemory:
      return "out of memory";
    default:
      return "";
  }
}

struct Pending {
  CopyHandle handle;
  const Input* input = nullptr;  // null for a copy meant to fail
  c10::Device target{c10::kCPU};
  Failure failure = Failure::kNone;
  bool poll_ready = false;
};

struct Tally {
  std::atomic<int64_t> issued{0}, verified{0}, dropped{0}, cross_thread{0}, polled{0};
  std::atomic<int64_t> failures_expected{0}, failures_seen{0};
  std::atomic<int64_t> in_flight{0}, most_in_flight{0};
  std::atomic<int64_t> by_route[4] = {};  // h2h, h2d, d2h, d2d

  void started() {
    const int64_t now = ++in_flight;
    int64_t most = most_in_flight.load();
    while (now > most && !most_in_flight.compare_exchange_weak(most, now)) {
    }
  }
  std::string progress() const {
    std::ostringstream s;
    s << "issued " << issued << ", verified " << verified << ", failures seen " << failures_seen
      << ", in flight " << in_flight;
    return s.str();
  }
};

// Handles passed to a thread for it to collect.
struct Mailbox {
  std::mutex mutex;
  std::deque<Pending> items;
};

class Soak {
 public:
  Soak() {
    const int gpus = std::min<int>(c10::cuda::device_count(), 2);
    devices_.push_back(kCpu);
    for (int d = 0; d < gpus; ++d)
      devices_.emplace_back(c10::kCUDA, static_cast<c10::DeviceIndex>(d));
    for (const c10::Device& device : devices_) {
      for (const bool mixed : {false, true}) {
        const c10::IValue cpu =
            mixed ? mtc::test::mixed_batch(kCpu) : mtc::test::reference_batch(kCpu);
        inputs_.push_back(
            {device.is_cpu()
                 ? cpu
                 : mtc::test::map_tensors(
                       cpu, [&](const at::Tensor& t) { return mtc::test::to_device(t, device); }),
             device, fingerprint(cpu)});
      }
      c10::impl::GenericList bad(c10::AnyType::get());
      bad.push_back(at::ones({3}, at::TensorOptions().device(device)));
      bad.push_back(
          at::sparse_coo_tensor(at::zeros({1, 2}, at::TensorOptions(at::kLong).device(device)),
                                at::ones({2}, at::TensorOptions().device(device)), {4}));
      unsupported_.push_back(bad);
    }
    // A dense CPU tensor that claims 4 TiB over 16 bytes: its device allocation fails before
    // anything reads it (as in ErrorPropagationGpu).
    static float storage[4] = {1, 2, 3, 4};
    too_large_ = c10::impl::GenericList(c10::AnyType::get());
    too_large_.push_back(at::ones({100}));
    too_large_.push_back(at::from_blob(storage, {int64_t{1} << 40}, at::kFloat));
  }

  const std::vector<c10::Device>& devices() const { return devices_; }
  Tally& tally() { return tally_; }

  void run_thread(int index, int64_t copies, uint64_t seed, Mailbox& mine, Mailbox& next) {
    std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(index));
    // Odd threads copy on a stream of their own, even ones on the default stream.
    std::optional<c10::cuda::CUDAStreamGuard> stream;
    if (devices_.size() > 1 && index % 2 == 1)
      stream.emplace(c10::cuda::getStreamFromPool(false, 0));
    const size_t window = 1 + rng() % 16;
    std::deque<Pending> own;
    for (int64_t i = 0; i < copies && !::testing::Test::HasFailure(); ++i) {
      drain(mine);
      std::optional<Pending> p = issue(rng);
      if (!p) continue;
      const uint64_t fate = rng() % 100;
      if (fate < 10 && p->failure == Failure::kNone) {
        ++tally_.dropped;  // destroyed unfinished, right away
        --tally_.in_flight;
        continue;
      }
      if (fate < 25) {
        ++tally_.cross_thread;
        const std::lock_guard<std::mutex> lock(next.mutex);
        next.items.push_back(std::move(*p));
        continue;
      }
      p->poll_ready = fate < 40;
      own.push_back(std::move(*p));
      while (own.size() > window) {
        collect(own.front());
        own.pop_front();
      }
    }
    for (Pending& p : own) collect(p);
    drain(mine);
  }

  // Collects what was left for a thread after every thread has stopped issuing.
  void drain(Mailbox& box) {
    while (true) {
      std::optional<Pending> p;
      {
        const std::lock_guard<std::mutex> lock(box.mutex);
        if (box.items.empty()) return;
        p.emplace(std::move(box.items.front()));
        box.items.pop_front();
      }
      collect(*p);
    }
  }

 private:
  std::optional<Pending> issue(std::mt19937_64& rng) {
    const c10::Device target = devices_[rng() % devices_.size()];
    Pending p;
    p.target = target;
    const uint64_t kind = rng() % 100;
    CopyOptions options;
    options.use_background_thread = rng() % 4 != 0;
    options.pack_cpu_tensors = rng() % 4 != 0;
    options.pinned_host_outputs = rng() % 4 == 0;
    ++tally_.issued;
    if (kind < 3) {
      p.failure = Failure::kInvalidOption;
      ++tally_.failures_expected;
      options.min_packed_alignment_bytes = 0;
      try {
        CopyHandle h = start_copy(inputs_[0].data, target, options);
        ADD_FAILURE() << "start_copy accepted alignment 0";
      } catch (const c10::Error& e) {
        expect_failure(e, Failure::kInvalidOption);
      }
      return std::nullopt;
    }
    if (kind < 6) {
      p.failure = Failure::kUnsupportedLeaf;
      tally_.started();
      ++tally_.failures_expected;
      p.handle = start_copy(unsupported_[rng() % unsupported_.size()], target, options);
      return p;
    }
    if (kind < 7 && target.is_cuda()) {
      p.failure = Failure::kDeviceOutOfMemory;
      tally_.started();
      ++tally_.failures_expected;
      p.handle = start_copy(too_large_, target, CopyOptions{});
      return p;
    }
    // Mostly the reference batch; the mixed batch (every path, but 35 MB) one time in sixteen.
    const bool mixed = rng() % 16 == 0;
    const size_t source = rng() % devices_.size();
    p.input = &inputs_[source * 2 + (mixed ? 1 : 0)];
    const int route = (p.input->device.is_cpu() ? 0 : 2) + (target.is_cpu() ? 0 : 1);
    ++tally_.by_route[route];
    tally_.started();
    p.handle = start_copy(p.input->data, target, options);
    return p;
  }

  void collect(Pending& p) {
    if (p.poll_ready) {
      ++tally_.polled;
      try {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!p.handle.ready() && std::chrono::steady_clock::now() < deadline)
          std::this_thread::yield();
      } catch (const c10::Error&) {
        // get() below sees the same failure
      }
    }
    try {
      const c10::IValue out = p.handle.get();
      if (p.failure != Failure::kNone) {
        ADD_FAILURE() << "a copy meant to fail (" << fragment_of(p.failure) << ") returned";
      } else {
        verify(out, *p.input, p.target);
      }
    } catch (const c10::Error& e) {
      if (p.failure == Failure::kNone) {
        ADD_FAILURE() << "a copy failed: " << e.what_without_backtrace();
      } else {
        expect_failure(e, p.failure);
      }
    }
    p.handle = CopyHandle();
    --tally_.in_flight;
  }

  void expect_failure(const c10::Error& e, Failure f) {
    const std::string message = e.what_without_backtrace();
    EXPECT_NE(message.find(fragment_of(f)), std::string::npos) << message;
    ++tally_.failures_seen;
  }

  void verify(const c10::IValue& out, const Input& in, const c10::Device& target) {
    mtc::test::expect_same_structure(out, in.data,
                                     [&](const at::Tensor& o, const at::Tensor& i, size_t) {
                                       if (!i.defined()) return;
                                       EXPECT_EQ(o.device(), target);
                                       EXPECT_EQ(o.sizes(), i.sizes());
                                     });
    const at::Tensor got = fingerprint(out);
    ASSERT_EQ(got.numel(), in.expected.numel());
    EXPECT_EQ(std::memcmp(got.const_data_ptr(), in.expected.const_data_ptr(), got.nbytes()), 0)
        << "a copy from " << in.device << " to " << target << " has other bytes";
    ++tally_.verified;
  }

  std::vector<c10::Device> devices_;
  std::vector<Input> inputs_;  // by source device: reference batch, mixed batch
  std::vector<c10::IValue> unsupported_;
  c10::impl::GenericList too_large_{c10::AnyType::get()};
  Tally tally_;
};

TEST(CopierSoak, ThreadsOfMixedCopiesWithDroppedHandlesAndFailures) {
  const int64_t copies = env_int("MTC_SOAK_COPIES", 40);
  const auto seed = static_cast<uint64_t>(env_int("MTC_SOAK_SEED", 1));
  const bool gpu = c10::cuda::device_count() > 0;
  if (!gpu) std::cout << "[          ] no CUDA device: CPU->CPU copies only\n";
  Soak soak;
  const int64_t pinned_before = gpu ? mtc::test::pinned_in_use() : 0;
  Tally& tally = soak.tally();
  const auto start = std::chrono::steady_clock::now();
  {
    const mtc::test::Watchdog watchdog(std::chrono::seconds(env_int("MTC_SOAK_SECONDS", 300)),
                                       "the soak", [&tally] { return tally.progress(); });
    std::vector<Mailbox> mailboxes(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        soak.run_thread(t, copies, seed, mailboxes[t], mailboxes[(t + 1) % kThreads]);
      });
    }
    for (std::thread& t : threads) t.join();
    for (Mailbox& box : mailboxes) soak.drain(box);  // get() on yet another thread
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(tally.failures_seen.load(), tally.failures_expected.load());
  EXPECT_EQ(tally.in_flight.load(), 0);

  // The pool survived: one more copy per route works, and nothing is held.
  for (const c10::Device& from : soak.devices()) {
    for (const c10::Device& to : soak.devices()) {
      const c10::IValue batch = mtc::test::reference_batch(from);
      mtc::test::expect_structure_copy(start_copy(batch, to).get(), batch, to);
    }
  }
  if (gpu) {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(mtc::test::pinned_in_use(), pinned_before) << "pinned staging still held";
  }
  std::cout << "[          ] soak: " << kThreads << " threads x " << copies
            << " copies = " << tally.issued << " copies in " << seconds << " s ("
            << static_cast<double>(tally.issued) / seconds << " copies/s); routes h2h "
            << tally.by_route[0] << ", h2d " << tally.by_route[1] << ", d2h " << tally.by_route[2]
            << ", d2d " << tally.by_route[3] << "; verified " << tally.verified
            << ", dropped unfinished " << tally.dropped << ", collected by another thread "
            << tally.cross_thread << ", through ready() " << tally.polled << "; failures expected "
            << tally.failures_expected << ", seen " << tally.failures_seen << "; at most "
            << tally.most_in_flight << " in flight\n";
}

}  // namespace
