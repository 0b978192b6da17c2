// The copier on a GPU with structures large enough to be walked in parts by several threads.
// Every test skips (with the reason shown) without a CUDA device.
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/empty.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "detail/worker_pool_set.h"
#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "structure_compare.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::CopyStats;
using mtc::start_copy;
using mtc::test::all_dtypes;
using mtc::test::bytes_of;
using mtc::test::expect_structure_copy;
using mtc::test::expected_packed;
using mtc::test::expected_reused;
using mtc::test::GpuTest;
using mtc::test::kCpu;
using mtc::test::kCuda0;
using mtc::test::map_tensors;
using mtc::test::mixed_batch;
using mtc::test::random_tensor;
using mtc::test::reference_batch;
using mtc::test::tensors_of;
using mtc::test::to_device;
using mtc::test::total_bytes;

// A structure whose first root element suggests many leaves is walked by several threads, each
// taking root elements in turn and packing into a chunk of its own. Packed, deferred
// (non-contiguous, over 256 KiB, zero-size) and reused leaves, nested and directly under the root,
// of every root kind, must all land where they belong.
TEST_F(GpuTest, LargeStructuresAreWalkedInParts) {
  constexpr int kElements = 64;
  auto element = [](int i) -> c10::IValue {
    if (i % 7 == 3) {
      // Tensors directly under the root: packed, and deferred.
      return i % 2 ? random_tensor(at::kFloat, {5, 3}).t() : random_tensor(at::kInt, {i + 1});
    }
    c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
    int k = 0;
    for (int round = 0; round < 2; ++round) {
      for (const at::ScalarType dtype : all_dtypes()) {
        ++k;
        d.insert(std::to_string(k) += "t", random_tensor(dtype, {(i + k) % 9 + 1}));
      }
    }
    d.insert(std::string("strided"), random_tensor(at::kLong, {12}).slice(0, 0, 12, 3));
    d.insert(std::string("empty"), at::empty({0, 4}));
    if (i % 16 == 0) d.insert(std::string("over_256KiB"), random_tensor(at::kFloat, {70 * 1024}));
    d.insert(std::string("on_gpu"), random_tensor(at::kHalf, {3}, kCuda0));
    d.insert(std::string("label"), std::to_string(i) += " label");
    return d;
  };
  std::vector<c10::IValue> elements;
  for (int i = 0; i < kElements; ++i) elements.push_back(element(i));
  std::vector<c10::IValue> roots;
  {
    c10::impl::GenericList l(c10::AnyType::get());
    for (const auto& e : elements) l.push_back(e);
    roots.push_back(l);
  }
  roots.push_back(c10::ivalue::Tuple::create(elements));
  {
    c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
    for (size_t i = 0; i < elements.size(); ++i)
      d.insert(std::to_string(elements.size() - i) += "k", elements[i]);
    roots.push_back(d);
  }
  const bool parallel = mtc::detail::worker_pool_for(kCuda0).size() > 0;
  int64_t most_threads = 0;
  for (const c10::IValue& root : roots) {
    const std::vector<at::Tensor> leaves = tensors_of(root);
    ASSERT_GE(leaves.size(), 1024u);
    // A chunk alignment above the allocator's own moves each thread's views along with its
    // chunk's memory when the chunk is queued.
    for (const int64_t alignment : {int64_t{16}, int64_t{4096}}) {
      for (const bool background : {true, false}) {
        SCOPED_TRACE(::testing::Message() << root.tagKind() << ", background " << background
                                          << ", alignment " << alignment);
        CopyOptions options;
        options.use_background_thread = background;
        options.min_packed_alignment_bytes = alignment;
        CopyHandle h = start_copy(root, kCuda0, options);
        const c10::IValue out = h.get();
        expect_structure_copy(out, root, kCuda0);
        const std::vector<at::Tensor> outputs = tensors_of(out);
        ASSERT_EQ(outputs.size(), leaves.size());
        for (size_t i = 0; i < leaves.size(); ++i) {
          const at::Tensor& in = leaves[i];
          const auto bytes = static_cast<int64_t>(in.nbytes());
          if (!in.is_cpu() || !in.is_contiguous() || bytes < 1 ||
              bytes > mtc::kMaxPackedTensorBytes)
            continue;  // not packed
          const auto a = static_cast<uintptr_t>(std::max<int64_t>(alignment, in.element_size()));
          EXPECT_EQ(reinterpret_cast<uintptr_t>(outputs[i].data_ptr()) % a, 0u) << "leaf " << i;
        }
        const CopyStats s = h.stats();
        EXPECT_EQ(s.tensors, static_cast<int64_t>(leaves.size()));
        EXPECT_EQ(s.bytes, total_bytes(leaves));
        EXPECT_EQ(s.reused, expected_reused(leaves, kCuda0));
        EXPECT_EQ(s.packed, expected_packed(leaves, kCuda0, options));
        EXPECT_EQ(s.packed + s.per_tensor + s.reused, s.tensors);
        // Each thread that walked part of it has a chunk of its own, unless it walked only
        // leaves that are not packed.
        EXPECT_GE(s.walk_threads, 1);
        EXPECT_LE(s.chunks, s.walk_threads);
        most_threads = std::max(most_threads, s.walk_threads);
        // With workers, the walk is split (whoever joins), and its thread queued the chunks.
        if (parallel && s.chunks > 0) {
          EXPECT_GT(s.split_queue_us, 0);
          EXPECT_GT(s.split_wait_us, 0);
          EXPECT_GT(s.split_leaf_ns, 0);
          // Staging each thread's chunks into pinned memory took time, where it was pinned.
          if (options.use_pinned_staging) {
            EXPECT_GT(s.split_stage_us, 0);
          }
        }
        // Packed chunks took memory and were queued (every thread's counted); the completion
        // event is recorded either way. Neither can exceed the copy's own time on its threads.
        if (s.chunks > 0) {
          EXPECT_GT(s.allocate_us, 0);
        }
        EXPECT_GT(s.driver_us, 0);
        EXPECT_LE(s.driver_us + s.allocate_us,
                  (s.traverse_us + s.submit_us) * static_cast<double>(s.walk_threads + 1));
      }
    }
  }
  // Helpers join as they wake up: not every copy is split, but over six copies of over 1,024
  // leaves some are.
  if (parallel) {
    EXPECT_GE(most_threads, 2) << "the walk was never split";
  }
}

// A leaf that cannot be copied, late in a structure walked in parts: other parts may already
// have queued their chunks' DMAs. get() names the leaf, and the staging comes back to the pool
// (the fixture checks) only after that device work is done.
TEST_F(GpuTest, LeafErrorInAWalkSplitInPartsReleasesEverything) {
  c10::impl::GenericList root =
      mtc::test::list_of_lists(40, 20, [](int k) { return random_tensor(at::kFloat, {k + 1}); });
  c10::impl::GenericList bad = root.get(37).toList();
  bad.set(2, at::empty({3}, at::TensorOptions().device(c10::kMeta)));
  for (const bool background : {true, false}) {
    CopyOptions options;
    options.use_background_thread = background;
    CopyHandle h = start_copy(root, kCuda0, options);
    try {
      h.get();
      ADD_FAILURE() << "no exception";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("tensor leaf 2 of root element 37"), std::string::npos)
          << e.what();
    }
  }
}

// A GPU->CPU copy of many small tensors packs them during the walk, each walking thread into a
// chunk of its own (a StorageImpl of its own: threads do not count references on one), and
// gathers every chunk in launches of up to 1,024 (here 1,024 and 176) into one block of host
// memory. One output kept alone keeps that block alive: later copies of other values into
// blocks of the same size, which take freed blocks back, do not touch it.
TEST_F(GpuTest, GpuToCpuOutputsPackedInTheWalkKeepTheirBlockAlive) {
  const c10::impl::GenericList big =
      mtc::test::list_of_lists(40, 30, [](int k) { return random_tensor(at::kFloat, {k + 1}); });
  const c10::IValue on_gpu =
      map_tensors(big, [](const at::Tensor& t) { return to_device(t, kCuda0); });
  const c10::IValue others =
      map_tensors(on_gpu, [](const at::Tensor& t) { return t.neg().add(1); });
  at::Tensor kept;
  {
    CopyHandle h = start_copy(on_gpu, kCpu);
    const c10::IValue out = h.get();
    expect_structure_copy(out, on_gpu, kCpu);
    const CopyStats s = h.stats();
    EXPECT_EQ(s.packed, 1200);
    EXPECT_EQ(s.per_tensor, 0);
    EXPECT_EQ(s.chunks, s.walk_threads) << "a chunk per walking thread";
    const std::vector<at::Tensor> outs = tensors_of(out);
    std::set<const c10::StorageImpl*> storages;
    for (const at::Tensor& t : outs) storages.insert(t.storage().unsafeGetStorageImpl());
    EXPECT_EQ(static_cast<int64_t>(storages.size()), s.chunks);
    mtc::test::expect_storages_back_to_back(outs, 16);
    kept = outs.at(1111);
  }
  const at::Tensor expected = tensors_of(big).at(1111);
  // Bytes, not values: the inputs are random bytes, NaNs included, and a NaN equals nothing.
  // Compared with equal(), the check failed in the ~0.7 % of processes whose random draw put a
  // NaN in this tensor (torch seeds each process anew), the likely cause of its one failure on a
  // 4 x H200 host (2026-11-29). A failure says whether the output's data pointer or storage
  // changed and whether a later output lies in its memory: its header replaced, or its block
  // reused under it.
  const void* data = kept.const_data_ptr();
  const c10::StorageImpl* storage = kept.storage().unsafeGetStorageImpl();
  const auto* block = static_cast<const std::byte*>(kept.storage().data());
  const size_t block_bytes = kept.storage().nbytes();
  for (int i = 0; i < 5; ++i) {
    const c10::IValue again = start_copy(others, kCpu).get();
    const bool later_output_inside = std::ranges::any_of(tensors_of(again), [&](const auto& t) {
      const auto* p = static_cast<const std::byte*>(t.const_data_ptr());
      return p >= block && p < block + block_bytes;
    });
    EXPECT_EQ(bytes_of(kept), bytes_of(expected))
        << "after copy " << i << ": data pointer "
        << (kept.const_data_ptr() == data ? "unchanged" : "changed") << ", storage "
        << (kept.storage().unsafeGetStorageImpl() == storage ? "unchanged" : "changed")
        << ", sizes " << kept.sizes() << "; an output of the later copy lies in its memory: "
        << (later_output_inside ? "yes" : "no");
  }
}

// The host memory of a GPU->CPU copy's packed outputs is theirs, and the copy's until it has
// completed: a result dropped before then leaves its block in use (the host copy out of pinned
// staging still writes there) until the copy ends, and then every block goes back to the
// cache. A packed output grows (resize_) into memory of its own, keeping its values.
TEST_F(GpuTest, GpuToCpuPackedOutputsOwnTheirHostMemory) {
  const c10::IValue in = reference_batch(kCuda0);
  const int64_t before = mtc::host_cache_stats().in_use_bytes;
  {
    CopyHandle h = start_copy(in, kCpu);
    { const c10::IValue dropped = h.take_result(); }
    EXPECT_GT(mtc::host_cache_stats().in_use_bytes, before)
        << "the block went back to the cache while its host copy was pending";
    h.wait();
  }
  EXPECT_EQ(mtc::host_cache_stats().in_use_bytes, before);

  const c10::IValue out = start_copy(in, kCpu).get();
  at::Tensor grown = tensors_of(out).at(7);
  const at::Tensor expected = tensors_of(in).at(7).cpu().flatten();
  grown.resize_({expected.numel() + 100000});
  EXPECT_TRUE(grown.narrow(0, 0, expected.numel()).equal(expected));
  EXPECT_TRUE(tensors_of(out).at(8).equal(tensors_of(in).at(8).cpu())) << "its neighbour";
}

// Outputs are created on other threads; under the caller's InferenceMode they must still be
// inference tensors (as .to() gives there), and normal tensors outside it, in both directions
// and in a walk split in parts.
TEST_F(GpuTest, OutputsFollowTheCallersInferenceMode) {
  const c10::impl::GenericList big =
      mtc::test::list_of_lists(40, 20, [](int k) { return random_tensor(at::kFloat, {k + 1}); });
  for (const c10::Device& source : {kCpu, kCuda0}) {
    const c10::Device target = source.is_cpu() ? kCuda0 : kCpu;
    const c10::IValue small = mixed_batch(source);
    const c10::IValue large =
        source.is_cpu()
            ? c10::IValue(big)
            : map_tensors(big, [](const at::Tensor& t) { return to_device(t, kCuda0); });
    for (const c10::IValue* in : {&small, &large}) {
      for (const bool inference : {true, false}) {
        SCOPED_TRACE(::testing::Message()
                     << source << " -> " << target << (in == &small ? ", mixed" : ", large")
                     << (inference ? ", in InferenceMode" : ""));
        c10::IValue out;
        {
          c10::InferenceMode guard(inference);
          out = start_copy(*in, target).get();
        }
        for (const at::Tensor& t : tensors_of(out)) {
          if (!t.defined() || t.device() != target) continue;
          // Tensors already on the target come back as they are, whatever the mode.
          bool reused = false;
          for (const at::Tensor& i : tensors_of(*in)) reused = reused || i.is_same(t);
          if (!reused) {
            EXPECT_EQ(t.is_inference(), inference);
          }
        }
      }
    }
  }
}

}  // namespace
