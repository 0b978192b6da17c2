// The copier's CPU side: argument validation, the CPU->CPU path (every leaf already on the
// target), handles, and the host-side helpers (packed staging fill, parallel memcpy, output
// views). Runs without a GPU.
#include "detail/impl_pool.h"
#include "detail/outputs.h"
#include "detail/pack_plan.h"
#include "detail/pinned_pool.h"
#include "detail/staging.h"
#include "detail/structure.h"
#include "detail/worker_pool.h"
#include "mtc/copier.h"

#include "structure_compare.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/sparse_coo_tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/CPUAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <numeric>
#include <set>
#include <thread>
#include <string>
#include <utility>
#include <vector>

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::start_copy;

const c10::Device kCpu(c10::kCPU);

void expect_throws_with(const std::function<void()>& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected a c10::Error mentioning '" << fragment << "'";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message '" << e.what() << "' does not mention '" << fragment << "'";
  }
}

// The copy of `data` fails with a c10::Error mentioning `fragment`: thrown by start_copy, or
// (the structure is walked on the worker) rethrown by get() and by ready().
void expect_copy_fails(const c10::IValue& data, const c10::Device& device, const CopyOptions& options,
                       const std::string& fragment) {
  CopyHandle h;
  try {
    h = start_copy(data, device, options);
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message '" << e.what() << "' does not mention '" << fragment << "'";
    return;
  }
  expect_throws_with([&] { h.get(); }, fragment);
  expect_throws_with([&] { (void)h.ready(); }, fragment);
  expect_throws_with([&] { h.get(); }, fragment);  // on every call
}

// A batch of every container kind and passthrough leaf, with tensors of several dtypes,
// layouts and sizes. `tensors` receives its tensor leaves in order.
c10::IValue mixed_batch(std::vector<at::Tensor>& tensors) {
  auto add = [&tensors](at::Tensor t) {
    tensors.push_back(t);
    return t;
  };
  c10::impl::GenericDict cam(c10::StringType::get(), c10::TensorType::get());
  cam.insert(std::string("boxes"), add(at::arange(40, at::kFloat).reshape({10, 4})));
  cam.insert(std::string("ids"), add(at::arange(10, at::kLong)));
  cam.insert(std::string("active"), add(at::ones({10}, at::kBool)));
  c10::impl::GenericDict by_int(c10::IntType::get(), c10::AnyType::get());
  by_int.insert(int64_t{3}, add(at::arange(6, at::kDouble).reshape({2, 3}).t()));  // transposed
  by_int.insert(int64_t{1}, std::string("label"));
  c10::List<at::Tensor> typed;
  typed.push_back(add(at::zeros({0}, at::kFloat)));                    // zero-size
  typed.push_back(add(at::arange(1 << 18, at::kInt)));                 // 1 MiB
  typed.push_back(add(at::arange(20, at::kShort).slice(0, 0, 20, 3)));  // strided
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(cam);
  list.push_back(by_int);
  list.push_back(typed);
  list.push_back(c10::ivalue::Tuple::create(
      {c10::IValue(add(at::full({}, 7.0))), c10::IValue(int64_t{5}), c10::IValue(1.5),
       c10::IValue(true), c10::IValue(), c10::IValue(std::string("s"))}));
  list.push_back(c10::impl::GenericList(c10::AnyType::get()));
  return list;
}

// `out` has the shape of `in` with new containers, and every tensor is the input's own: a copy
// to the CPU returns CPU tensors as they are.
void expect_same_structure_same_tensors(const c10::IValue& out, const c10::IValue& in) {
  mtc::test::expect_same_structure(out, in, mtc::test::expect_same_tensor);
}

// ---------------------------------------------------------------------------------------------
// CPU -> CPU

TEST(CopierCpu, CpuToCpuReturnsTheSameTensorsInNewContainers) {
  for (const bool background : {true, false}) {
    SCOPED_TRACE(::testing::Message() << "use_background_thread " << background);
    std::vector<at::Tensor> tensors;
    const c10::IValue in = mixed_batch(tensors);
    CopyOptions options;
    options.use_background_thread = background;
    CopyHandle h = start_copy(in, kCpu, options);
    ASSERT_TRUE(h.valid());
    const c10::IValue out = h.get();
    expect_same_structure_same_tensors(out, in);
    EXPECT_TRUE(h.ready());
    // The typed list stays typed.
    EXPECT_TRUE(out.toList().get(2).isTensorList());

    const mtc::CopyStats s = h.stats();
    int64_t bytes = 0;
    for (const at::Tensor& t : tensors) bytes += static_cast<int64_t>(t.nbytes());
    EXPECT_EQ(s.tensors, static_cast<int64_t>(tensors.size()));
    EXPECT_EQ(s.bytes, bytes);
    EXPECT_EQ(s.reused, static_cast<int64_t>(tensors.size()));
    EXPECT_EQ(s.packed, 0);
    EXPECT_EQ(s.chunks, 0);
    EXPECT_EQ(s.per_tensor, 0);
    EXPECT_EQ(s.pinned_bytes, 0);
  }
}

// Wide roots with many leaves: the result is rebuilt in pieces (one group of root children per
// worker). Children of very uneven weight, for every kind of root container.
TEST(CopierCpu, ManyLeavesUnderEveryRootKind) {
  std::vector<c10::IValue> children;
  std::vector<at::Tensor> tensors;
  {
    c10::impl::GenericList heavy(c10::AnyType::get());
    for (int i = 0; i < 300; ++i) heavy.push_back(at::full({2}, static_cast<double>(i)));
    children.push_back(heavy);
  }
  for (int i = 0; i < 20; ++i) children.push_back(std::to_string(i) += " passthrough");
  {
    c10::impl::GenericDict d(c10::StringType::get(), c10::TensorType::get());
    for (int i = 0; i < 5; ++i) d.insert(std::to_string(i) += "t", at::ones({i + 1}));
    children.push_back(d);
  }
  for (int i = 0; i < 19; ++i) children.push_back(at::arange(i + 1, at::kLong));
  children.push_back(c10::impl::GenericList(c10::AnyType::get()));
  {
    std::vector<c10::IValue> inner;
    for (int i = 0; i < 100; ++i) inner.push_back(at::zeros({1}, at::kInt));
    children.push_back(c10::ivalue::Tuple::create(std::move(inner)));
  }
  children.push_back(at::Tensor());

  std::vector<c10::IValue> roots;
  {
    c10::impl::GenericList l(c10::AnyType::get());
    for (const auto& c : children) l.push_back(c);
    roots.push_back(l);
  }
  roots.push_back(c10::ivalue::Tuple::create(children));
  {
    c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
    for (size_t i = 0; i < children.size(); ++i) d.insert(std::to_string(1000 - i) += "key", children[i]);
    roots.push_back(d);
  }
  {
    c10::impl::GenericDict d(c10::IntType::get(), c10::AnyType::get());
    for (size_t i = 0; i < children.size(); ++i) d.insert(static_cast<int64_t>(i) * 3 - 50, children[i]);
    roots.push_back(d);
  }
  {
    c10::List<at::Tensor> typed;
    for (int i = 0; i < 500; ++i) typed.push_back(at::full({1}, static_cast<double>(i)));
    roots.push_back(typed);
  }
  for (const c10::IValue& root : roots) {
    for (const bool background : {true, false}) {
      SCOPED_TRACE(::testing::Message() << root.tagKind() << ", background " << background);
      CopyOptions options;
      options.use_background_thread = background;
      for (int round = 0; round < 5; ++round) {
        CopyHandle h = start_copy(root, kCpu, options);
        const c10::IValue out = h.get();
        expect_same_structure_same_tensors(out, root);
        if (root.isTensorList()) {
          EXPECT_TRUE(out.isTensorList());
        }
        if (::testing::Test::HasFailure()) return;
        EXPECT_GE(h.stats().tensors, 425);
        EXPECT_EQ(h.stats().reused, h.stats().tensors);
      }
    }
  }
}

TEST(CopierCpu, BareTensorAndPassthroughRoots) {
  const at::Tensor t = at::arange(5, at::kFloat);
  CopyHandle h = start_copy(t, kCpu);
  const c10::IValue out = h.get();
  ASSERT_TRUE(out.isTensor());
  EXPECT_TRUE(out.toTensor().is_same(t));
  EXPECT_EQ(h.stats().tensors, 1);
  EXPECT_EQ(h.stats().bytes, 20);

  EXPECT_EQ(start_copy(c10::IValue(std::string("only a string")), kCpu).get().toStringRef(),
            "only a string");
  EXPECT_EQ(start_copy(c10::IValue(int64_t{42}), kCpu).get().toInt(), 42);
  EXPECT_EQ(start_copy(c10::IValue(0.5), kCpu).get().toDouble(), 0.5);
  EXPECT_FALSE(start_copy(c10::IValue(false), kCpu).get().toBool());
  EXPECT_TRUE(start_copy(c10::IValue(), kCpu).get().isNone());
  CopyHandle none = start_copy(c10::IValue(), kCpu);
  none.get();
  EXPECT_EQ(none.stats().tensors, 0);
  EXPECT_EQ(none.stats().bytes, 0);
}

TEST(CopierCpu, UndefinedTensorsPassThrough) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(at::Tensor());
  list.push_back(at::ones({2}));
  const auto out = start_copy(list, kCpu).get().toList();
  ASSERT_EQ(out.size(), 2u);
  ASSERT_TRUE(out.get(0).isTensor());
  EXPECT_FALSE(out.get(0).toTensor().defined());
  EXPECT_TRUE(out.get(1).toTensor().is_same(list.get(1).toTensor()));
}

TEST(CopierCpu, EmptyContainersAtTheRoot) {
  const c10::IValue list = c10::impl::GenericList(c10::AnyType::get());
  const c10::IValue dict = c10::impl::GenericDict(c10::IntType::get(), c10::TensorType::get());
  const c10::IValue tuple = c10::ivalue::Tuple::create(std::vector<c10::IValue>{});
  const c10::IValue tensors = c10::List<at::Tensor>();
  for (const c10::IValue* v : {&list, &dict, &tuple, &tensors}) {
    CopyHandle h = start_copy(*v, kCpu);
    const c10::IValue out = h.get();
    expect_same_structure_same_tensors(out, *v);
    EXPECT_EQ(h.stats().tensors, 0);
  }
}

TEST(CopierCpu, DeepNesting) {
  const at::Tensor t = at::ones({3});
  auto nest = [&t](int levels) {
    c10::IValue v = t;
    for (int i = 0; i < levels; ++i) {
      c10::impl::GenericList l(c10::AnyType::get());
      l.push_back(v);
      v = l;
    }
    return v;
  };
  c10::IValue out = start_copy(nest(mtc::detail::kMaxNestingDepth), kCpu).get();
  for (int i = 0; i < mtc::detail::kMaxNestingDepth; ++i) out = out.toList().get(0);
  EXPECT_TRUE(out.toTensor().is_same(t));
  for (const bool background : {true, false}) {
    CopyOptions options;
    options.use_background_thread = background;
    expect_copy_fails(nest(mtc::detail::kMaxNestingDepth + 1), kCpu, options, "nested deeper");
    // Under a wide root (walked in parallel parts) too.
    c10::impl::GenericList wide(c10::AnyType::get());
    for (int i = 0; i < 40; ++i) wide.push_back(at::ones({1}));
    wide.set(29, nest(mtc::detail::kMaxNestingDepth));
    expect_copy_fails(wide, kCpu, options, "nested deeper");
  }
}

TEST(CopierCpu, OutputContainersAreIndependentOfTheInput) {
  c10::impl::GenericList inner(c10::AnyType::get());
  inner.push_back(at::ones({2}));
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(inner);
  list.push_back(std::string("x"));
  CopyHandle h = start_copy(list, kCpu);
  const auto out = h.get().toList();
  // Once the copy is complete the input may change; the output does not follow.
  list.push_back(int64_t{1});
  list.set(1, std::string("replaced"));
  inner.push_back(at::zeros({1}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out.get(1).toStringRef(), "x");
  EXPECT_EQ(out.get(0).toList().size(), 1u);
  // And the other way round.
  out.get(0).toList().push_back(int64_t{3});
  EXPECT_EQ(inner.size(), 2u);
}

TEST(CopierCpu, GetTwiceReturnsTheSameResult) {
  std::vector<at::Tensor> tensors;
  const c10::IValue in = mixed_batch(tensors);
  CopyHandle h = start_copy(in, kCpu);
  const c10::IValue a = h.get();
  const c10::IValue b = h.get();
  EXPECT_TRUE(a.is(b));
  EXPECT_TRUE(h.ready());
}

TEST(CopierCpu, PinnedPoolIsNotTouchedByCpuToCpu) {
  const mtc::detail::PinnedPoolStats before = mtc::detail::PinnedPool::instance().stats();
  std::vector<at::Tensor> tensors;
  const c10::IValue in = mixed_batch(tensors);
  for (int i = 0; i < 3; ++i) start_copy(in, kCpu).get();
  const mtc::detail::PinnedPoolStats after = mtc::detail::PinnedPool::instance().stats();
  EXPECT_EQ(after.slab_allocations, before.slab_allocations);
  EXPECT_EQ(after.in_use_bytes, before.in_use_bytes);
}

// With every worker busy and other work queued ahead of the copy, get() neither waits for a
// worker nor runs the queued work first: the caller runs the copy itself. (Otherwise get() would
// not return before the blocking tasks are released below.)
TEST(CopierCpu, GetRunsTheCopyWhenNoWorkerHasStartedIt) {
  auto& pool = mtc::detail::WorkerPool::instance();
  std::atomic<bool> release{false};
  std::atomic<int> blocked{0};
  std::atomic<int> finished{0};
  // Its last access to the test's stack is the increment of `finished`: the test waits for it.
  auto block = [&] {
    blocked.fetch_add(1);
    while (!release.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    finished.fetch_add(1);
  };
  for (int w = 0; w < pool.size(); ++w) pool.submit(block);
  while (blocked.load() < pool.size()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  pool.submit(block);  // queued ahead of the copy
  std::vector<at::Tensor> tensors;
  const c10::IValue in = mixed_batch(tensors);
  std::atomic<bool> done{false};
  std::thread caller([&] {
    CopyHandle h = start_copy(in, kCpu);
    expect_same_structure_same_tensors(h.get(), in);
    done.store(true);
  });
  for (int i = 0; i < 2000 && !done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(done.load()) << "get() waited for a worker";
  release.store(true);
  caller.join();
  // The task queued ahead of the copy still runs after the copy; it must be done before the
  // variables it uses go out of scope.
  while (finished.load() < pool.size() + 1) std::this_thread::sleep_for(std::chrono::microseconds(50));
}

TEST(CopierCpu, ManyConcurrentCallers) {
  std::vector<at::Tensor> tensors;
  const c10::IValue in = mixed_batch(tensors);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&in, &failures] {
      for (int i = 0; i < 200; ++i) {
        const c10::IValue out = start_copy(in, kCpu).get();
        if (!out.isList() || out.toList().size() != in.toList().size() || out.is(in))
          failures.fetch_add(1);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// ---------------------------------------------------------------------------------------------
// Handles

TEST(CopierCpu, EmptyHandle) {
  CopyHandle h;
  EXPECT_FALSE(h.valid());
  EXPECT_THROW(h.get(), c10::Error);
  EXPECT_THROW((void)h.ready(), c10::Error);
  EXPECT_THROW((void)h.stats(), c10::Error);
}

TEST(CopierCpu, MovedHandles) {
  const at::Tensor t = at::ones({4});
  CopyHandle a = start_copy(t, kCpu);
  CopyHandle b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from state is specified
  ASSERT_TRUE(b.valid());
  EXPECT_TRUE(b.get().toTensor().is_same(t));

  const at::Tensor u = at::zeros({4});
  CopyHandle c = start_copy(u, kCpu);
  b = std::move(c);  // drops (waits for) b's copy, takes c's
  EXPECT_FALSE(c.valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(b.get().toTensor().is_same(u));
  CopyHandle d;
  d = std::move(b);
  EXPECT_TRUE(d.get().toTensor().is_same(u));
}

// ---------------------------------------------------------------------------------------------
// Argument validation

TEST(CopierCpu, AlignmentBelowOneThrows) {
  const at::Tensor t = at::ones({4});
  for (const int64_t alignment : {int64_t{0}, int64_t{-1}, int64_t{-4096}}) {
    CopyOptions options;
    options.min_packed_alignment_bytes = alignment;
    expect_throws_with([&] { start_copy(t, kCpu, options); }, "min_packed_alignment_bytes");
  }
  CopyOptions ok;
  ok.min_packed_alignment_bytes = 1;
  EXPECT_NO_THROW(start_copy(t, kCpu, ok).get());
}

TEST(CopierCpu, ChunkLimitNotPositiveThrows) {
  const at::Tensor t = at::ones({4});
  for (const int64_t limit : {int64_t{0}, int64_t{-1}, int64_t{-(32 << 20)}}) {
    CopyOptions options;
    options.max_packed_chunk_bytes = limit;
    expect_throws_with([&] { start_copy(t, kCpu, options); }, "max_packed_chunk_bytes");
  }
  CopyOptions ok;
  ok.max_packed_chunk_bytes = 1;
  EXPECT_NO_THROW(start_copy(t, kCpu, ok).get());
}

TEST(CopierCpu, OptionsAreValidatedEvenWithoutTensors) {
  CopyOptions options;
  options.min_packed_alignment_bytes = 0;
  EXPECT_THROW(start_copy(c10::IValue(), kCpu, options), c10::ValueError);
}

TEST(CopierCpu, CudaTargetWithoutCudaThrows) {
  if (c10::cuda::device_count() > 0) GTEST_SKIP() << "CUDA is available here: this test needs a machine without a GPU";
  const at::Tensor t = at::ones({4});
  expect_throws_with([&] { start_copy(t, c10::Device(c10::kCUDA, 0)); }, "no CUDA device");
  expect_throws_with([&] { start_copy(t, c10::Device(c10::kCUDA)); }, "no CUDA device");
  EXPECT_THROW(start_copy(c10::IValue(), c10::Device(c10::kCUDA, 0)), c10::ValueError);
}

TEST(CopierCpu, CudaIndexOutOfRangeThrows) {
  const at::Tensor t = at::ones({4});
  const auto count = static_cast<c10::DeviceIndex>(c10::cuda::device_count());
  EXPECT_THROW(start_copy(t, c10::Device(c10::kCUDA, count)), c10::ValueError);
  EXPECT_THROW(start_copy(t, c10::Device(c10::kCUDA, 100)), c10::ValueError);
  if (count < 8) expect_throws_with([&] { start_copy(t, c10::Device(c10::kCUDA, 7)); }, "cuda:7");
}

TEST(CopierCpu, UnsupportedTargetDeviceTypesThrow) {
  const at::Tensor t = at::ones({4});
  expect_throws_with([&] { start_copy(t, c10::Device(c10::kMeta)); }, "unsupported target");
  EXPECT_THROW(start_copy(t, c10::Device(c10::kXPU, 0)), c10::Error);
  EXPECT_THROW(start_copy(t, c10::Device(c10::kMPS)), c10::Error);
  EXPECT_THROW(start_copy(c10::IValue(), c10::Device(c10::kMeta)), c10::Error);
}

TEST(CopierCpu, LeafOnAnUnsupportedDeviceThrows) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(at::ones({2}));
  list.push_back(at::empty({3}, at::TensorOptions().device(c10::kMeta)));
  for (const bool background : {true, false}) {
    CopyOptions options;
    options.use_background_thread = background;
    expect_copy_fails(list, kCpu, options, "leaf 1");
    expect_copy_fails(list, kCpu, options, "only cpu and cuda tensors");
  }
}

// A structure large enough to be walked in parts: a bad leaf deep in a later root element fails
// the copy, and the message says which element (leaves are numbered within it).
TEST(CopierCpu, LeafErrorInAWalkSplitInParts) {
  c10::impl::GenericList root = mtc::test::list_of_lists(40, 20, [](int k) { return at::ones({k + 1}); });
  c10::impl::GenericList bad = root.get(33).toList();
  bad.set(4, at::empty({3}, at::TensorOptions().device(c10::kMeta)));
  for (const bool background : {true, false}) {
    CopyOptions options;
    options.use_background_thread = background;
    expect_copy_fails(root, kCpu, options, "tensor leaf 4 of root element 33");
  }
}

// Two bad leaves in elements walked by different parts: the error reported is always the
// earlier one, whichever part fails first in time.
TEST(CopierCpu, SplitWalkReportsTheEarliestBadLeaf) {
  c10::impl::GenericList root = mtc::test::list_of_lists(40, 20, [](int k) { return at::ones({k + 1}); });
  const at::Tensor meta = at::empty({3}, at::TensorOptions().device(c10::kMeta));
  root.get(38).toList().set(0, meta);  // near the end: its part is the last
  root.get(12).toList().set(7, meta);
  for (int round = 0; round < 20; ++round) {
    expect_copy_fails(root, kCpu, CopyOptions(), "tensor leaf 7 of root element 12");
    if (::testing::Test::HasFailure()) return;
  }
}

// A large structure is walked by the copy's thread and whichever workers wake up in time, each
// taking root elements in turn. Back-to-back copies (helpers of one copy still arriving while the
// next runs) and copies after an idle gap (helpers asleep, arriving late or never) must all be
// complete, and some must have been walked by more than one thread.
TEST(CopierCpu, SplitWalkIsCompleteWhicheverHelpersJoin) {
  const c10::impl::GenericList root =
      mtc::test::list_of_lists(40, 20, [](int k) { return at::full({1}, static_cast<double>(k)); });
  const int pool = mtc::detail::WorkerPool::instance().size();
  int64_t most_threads = 0;
  // At least 200 copies; then more until one was split, for up to 20 s: on a loaded 2-core
  // machine the helpers often wake only after the copy's own thread has walked everything.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int round = 0; round < 200 || (most_threads < 2 && pool > 0 && std::chrono::steady_clock::now() < deadline);
       ++round) {
    if (round % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    CopyOptions options;
    options.use_background_thread = round % 2 == 0;
    CopyHandle h = start_copy(root, kCpu, options);
    const c10::IValue out = h.get();
    expect_same_structure_same_tensors(out, root);
    const mtc::CopyStats s = h.stats();
    EXPECT_EQ(s.tensors, 800);
    EXPECT_GE(s.walk_threads, 1);
    EXPECT_LE(s.walk_threads, pool + 2);  // the copy's thread, the workers and a waiting caller
    most_threads = std::max(most_threads, s.walk_threads);
    if (::testing::Test::HasFailure()) return;
  }
  if (pool > 0) {
    EXPECT_GE(most_threads, 2) << "no copy was walked by more than one thread";
  }
}

TEST(CopierCpu, SparseLeafThrows) {
  const at::Tensor sparse = at::sparse_coo_tensor(at::zeros({1, 2}, at::kLong), at::ones({2}), {4});
  ASSERT_EQ(sparse.layout(), c10::kSparse);
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert(std::string("dense"), at::ones({2}));
  dict.insert(std::string("sparse"), sparse);
  for (const bool background : {true, false}) {
    CopyOptions options;
    options.use_background_thread = background;
    expect_copy_fails(sparse, kCpu, options, "layout");
    expect_copy_fails(dict, kCpu, options, "leaf 1");
  }
}

// ---------------------------------------------------------------------------------------------
// Host-side helpers of the routes

std::vector<at::Tensor> random_tensors(const std::vector<std::pair<int64_t, at::ScalarType>>& specs) {
  std::vector<at::Tensor> out;
  for (const auto& [numel, dtype] : specs) {
    const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(dtype));
    out.push_back(at::randint(256, {bytes}, at::kByte).view(dtype));
  }
  return out;
}

// fill_staging must put each tensor's bytes at its planned place and touch nothing else, on one
// thread (small totals) and split across the worker pool (>= kParallelFillBytes).
TEST(Staging, FillStagingPlacesEveryItemAndNothingElse) {
  using namespace mtc::detail;
  for (const int64_t scale : {int64_t{1}, int64_t{40}}) {
    SCOPED_TRACE(::testing::Message() << "scale " << scale);
    std::vector<std::pair<int64_t, at::ScalarType>> specs;
    const at::ScalarType dtypes[] = {at::kByte, at::kHalf, at::kFloat, at::kDouble, at::kComplexDouble};
    for (int i = 0; i < 97; ++i) specs.push_back({1 + (i * 37) % 200 * scale, dtypes[i % 5]});
    const std::vector<at::Tensor> inputs = random_tensors(specs);
    std::vector<PackCandidate> candidates;
    for (size_t i = 0; i < inputs.size(); ++i)
      candidates.push_back({static_cast<int64_t>(i), static_cast<int64_t>(inputs[i].nbytes()),
                            static_cast<int64_t>(inputs[i].element_size())});
    const PackPlan plan = plan_packing(candidates, 16, 256 * 1024);
    std::vector<int64_t> chunk_offsets;
    int64_t total = 0;
    for (const PackChunk& c : plan.chunks) {
      chunk_offsets.push_back(total);
      total += (c.bytes + 255) / 256 * 256;
    }
    int64_t payload = 0;
    for (const PackChunk& c : plan.chunks) payload += c.bytes;
    if (scale > 1) {
      EXPECT_GE(payload, kParallelFillBytes) << "the parallel path is not exercised";
      EXPECT_GT(plan.chunks.size(), 1u);
    } else {
      EXPECT_LT(payload, kParallelFillBytes);
    }
    std::vector<StagingCopy> copies;
    for (const PackItem& item : plan.items)
      copies.push_back({inputs[item.leaf].const_data_ptr(), chunk_offsets[item.chunk] + item.offset, item.bytes});
    std::vector<std::byte> buffer(static_cast<size_t>(total), std::byte{0xCD});
    fill_staging(copies, buffer.data());
    std::vector<bool> covered(buffer.size(), false);
    for (const PackItem& item : plan.items) {
      const int64_t at_byte = chunk_offsets[item.chunk] + item.offset;
      EXPECT_EQ(std::memcmp(buffer.data() + at_byte, inputs[item.leaf].const_data_ptr(),
                            static_cast<size_t>(item.bytes)),
                0)
          << "leaf " << item.leaf;
      for (int64_t k = 0; k < item.bytes; ++k) covered[at_byte + k] = true;
    }
    size_t stray = 0;
    for (size_t k = 0; k < buffer.size(); ++k)
      if (!covered[k] && buffer[k] != std::byte{0xCD}) ++stray;
    EXPECT_EQ(stray, 0u) << "bytes outside every item were written";
  }
}

TEST(Staging, RunHostCopiesCopiesExactlyTheRanges) {
  using mtc::detail::kParallelFillBytes;
  // One copy of each size, then several copies at once whose parts begin and end inside copies.
  const std::vector<std::vector<int64_t>> cases{
      {0}, {1}, {kParallelFillBytes - 1}, {kParallelFillBytes}, {kParallelFillBytes + 3},
      {5 * kParallelFillBytes + 7}, {33 * kParallelFillBytes + 1},
      {3, kParallelFillBytes / 2 + 1, 0, 2 * kParallelFillBytes + 5, 17, kParallelFillBytes - 9},
      {kParallelFillBytes / 3, kParallelFillBytes / 3, kParallelFillBytes / 3, kParallelFillBytes / 3}};
  for (const std::vector<int64_t>& sizes : cases) {
    SCOPED_TRACE(::testing::Message() << sizes.size() << " copies, the first of " << sizes[0] << " bytes");
    std::vector<at::Tensor> sources;
    std::vector<std::vector<std::byte>> targets;
    std::vector<mtc::detail::HostCopy> copies;
    for (const int64_t bytes : sizes) {
      sources.push_back(at::randint(256, {bytes + 1}, at::kByte));
      targets.emplace_back(static_cast<size_t>(bytes + 64), std::byte{0x5A});
      const auto* src = static_cast<const std::byte*>(sources.back().const_data_ptr()) + 1;  // unaligned
      copies.push_back({targets.back().data() + 3, src, bytes});
    }
    mtc::detail::run_host_copies(copies);
    for (size_t c = 0; c < copies.size(); ++c) {
      const std::vector<std::byte>& dst = targets[c];
      const auto bytes = static_cast<size_t>(sizes[c]);
      EXPECT_EQ(std::memcmp(dst.data() + 3, copies[c].src, bytes), 0) << "copy " << c;
      for (size_t k = 0; k < 3; ++k) EXPECT_EQ(dst[k], std::byte{0x5A}) << "copy " << c;
      for (size_t k = bytes + 3; k < dst.size(); ++k)
        ASSERT_EQ(dst[k], std::byte{0x5A}) << "copy " << c << " written past its end at " << k;
    }
  }
}

TEST(Outputs, AlignmentShift) {
  using mtc::detail::alignment_shift;
  alignas(4096) static std::byte base[8192];
  EXPECT_EQ(alignment_shift(base, 1), 0);
  EXPECT_EQ(alignment_shift(base, 4096), 0);
  EXPECT_EQ(alignment_shift(base + 1, 16), 15);
  EXPECT_EQ(alignment_shift(base + 16, 16), 0);
  EXPECT_EQ(alignment_shift(base + 100, 4096), 3996);
  EXPECT_EQ(alignment_shift(base + 5, 1), 0);
}

TEST(Outputs, MakeViewOverASharedStorage) {
  using namespace mtc::detail;
  c10::DataPtr data = c10::GetCPUAllocator()->allocate(1024);
  auto* raw = static_cast<std::byte*>(data.get());
  for (int i = 0; i < 1024; ++i) raw[i] = static_cast<std::byte>(i % 251);
  const c10::Storage storage = make_storage(std::move(data), 1024);
  EXPECT_EQ(storage.nbytes(), 1024u);

  const at::Tensor like_f = at::zeros({3, 4}, at::kFloat);
  const at::Tensor f = make_view(storage, 64, like_f);
  EXPECT_EQ(f.sizes(), like_f.sizes());
  EXPECT_EQ(f.strides(), like_f.strides());
  EXPECT_EQ(f.scalar_type(), at::kFloat);
  EXPECT_EQ(f.device(), kCpu);
  EXPECT_EQ(f.data_ptr(), static_cast<void*>(raw + 64));
  EXPECT_TRUE(f.storage().is_alias_of(storage));

  const at::Tensor like_d = at::zeros({5}, at::kDouble).slice(0, 0, 5, 1);
  const at::Tensor d = make_view(storage, 128, like_d);
  EXPECT_EQ(d.data_ptr(), static_cast<void*>(raw + 128));
  EXPECT_EQ(std::memcmp(d.const_data_ptr(), raw + 128, 40), 0);

  const at::Tensor like_t = at::zeros({4, 2}, at::kShort).t();  // keeps the like's strides
  const at::Tensor t = make_view(storage, 6, like_t);
  EXPECT_EQ(t.strides(), like_t.strides());
  EXPECT_EQ(t.data_ptr(), static_cast<void*>(raw + 6));
}

// Outputs are usually made on a worker and freed on the caller's thread. The TensorImpls freed
// on one thread go, in whole batches, to a shared list from which another thread that makes
// outputs takes them back, and a thread that exits hands over the blocks it kept.
TEST(Outputs, TensorImplsFreedOnAnotherThreadAreReusedInBatches) {
  using namespace mtc::detail;
  const at::Tensor like = at::ones({2});
  const c10::Storage storage = like.storage();
  constexpr int kCount = 1000;
  auto make = [&](std::vector<at::Tensor>& out) {
    for (int i = 0; i < kCount; ++i) out.push_back(make_view(storage, 0, like));
  };
  std::vector<at::Tensor> made;
  std::thread(make, std::ref(made)).join();
  std::set<const void*> impls;
  for (const at::Tensor& t : made) impls.insert(t.unsafeGetTensorImpl());
  const int64_t before = impl_pool::shared_blocks();
  made.clear();  // this thread keeps fewer than two batches and hands the rest on
  const int64_t handed = impl_pool::shared_blocks() - before;
  EXPECT_GE(handed, kCount - 2 * static_cast<int64_t>(impl_pool::kBatch));
  EXPECT_EQ(handed % static_cast<int64_t>(impl_pool::kBatch), 0);

  std::vector<at::Tensor> again;
  std::thread(make, std::ref(again)).join();  // takes batches back; at exit, hands over the rest
  int reused = 0;
  for (const at::Tensor& t : again) reused += impls.count(t.unsafeGetTensorImpl()) ? 1 : 0;
  // The first blocks handed on may be ones this thread kept from earlier tests.
  EXPECT_GE(reused, handed - 2 * static_cast<int64_t>(impl_pool::kBatch));
  EXPECT_GT(reused, kCount / 2);
  EXPECT_LE(impl_pool::shared_blocks(), before + static_cast<int64_t>(impl_pool::kBatch));
  for (const at::Tensor& t : again) {
    EXPECT_EQ(t.sizes(), like.sizes());
    EXPECT_TRUE(t.storage().is_alias_of(storage));
  }
}

// Packed outputs copy raw bytes, so a view over them must carry the input's conj / neg bits to
// mean the same values.
TEST(Outputs, MakeViewKeepsTheMeaningOfConjugateAndNegativeInputs) {
  using namespace mtc::detail;
  const at::Tensor base = at::randint(256, {64}, at::kByte).view(at::kComplexFloat);  // 8 values
  c10::DataPtr data = c10::GetCPUAllocator()->allocate(64);
  std::memcpy(data.get(), base.const_data_ptr(), 64);
  const c10::Storage storage = make_storage(std::move(data), 64);

  const at::Tensor conj = base.conj();
  ASSERT_TRUE(conj.is_conj());
  const at::Tensor view = make_view(storage, 0, conj);
  EXPECT_TRUE(at::equal(view.resolve_conj(), conj.resolve_conj()) ||
              std::memcmp(view.resolve_conj().const_data_ptr(), conj.resolve_conj().const_data_ptr(), 64) == 0)
      << "the conjugate bit was dropped";

  const at::Tensor real = at::randint(256, {64}, at::kByte).view(at::kFloat);
  c10::DataPtr data2 = c10::GetCPUAllocator()->allocate(64);
  std::memcpy(data2.get(), real.const_data_ptr(), 64);
  const c10::Storage storage2 = make_storage(std::move(data2), 64);
  const at::Tensor neg = at::_neg_view(real);
  ASSERT_TRUE(neg.is_neg());
  const at::Tensor nview = make_view(storage2, 0, neg);
  EXPECT_EQ(std::memcmp(nview.resolve_neg().const_data_ptr(), neg.resolve_neg().const_data_ptr(), 64), 0)
      << "the negative bit was dropped";
}

}  // namespace
