// The copier's CPU->CPU path: every leaf is already on the target, so a copy gives the same
// tensors in new containers, whatever the root and however wide or deep. Runs without a GPU.
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cpu_test_support.h"
#include "detail/structure.h"
#include "mtc/copier.h"
#include "mtc/stack_room.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::start_copy;
using mtc::test::expect_copy_fails;
using mtc::test::expect_same_structure_same_tensors;
using mtc::test::kCpu;
using mtc::test::mixed_batch;

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
    for (size_t i = 0; i < children.size(); ++i)
      d.insert(std::to_string(1000 - i) += "key", children[i]);
    roots.push_back(d);
  }
  {
    c10::impl::GenericDict d(c10::IntType::get(), c10::AnyType::get());
    for (size_t i = 0; i < children.size(); ++i)
      d.insert(static_cast<int64_t>(i) * 3 - 50, children[i]);
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

// Runs `job` on a thread of `stack_bytes` of stack, as a Python thread after
// threading.stack_size() is.
void on_small_stack(size_t stack_bytes, const std::function<void()>& job) {
  pthread_attr_t attributes;
  ASSERT_EQ(pthread_attr_init(&attributes), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attributes, stack_bytes), 0);
  pthread_t thread;
  auto run = [](void* arg) -> void* {
    (*static_cast<const std::function<void()>*>(arg))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attributes, run, const_cast<std::function<void()>*>(&job)), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attributes);
}

// The stack left on a new thread of `stack_bytes`: less than that by the thread's static TLS,
// which glibc puts at the top of its stack (torch's alone takes most of 256 KiB).
size_t left_on_a_thread_of(size_t stack_bytes) {
  size_t left = 0;
  on_small_stack(stack_bytes, [&] { left = mtc::stack_bytes_left(); });
  return left;
}

TEST(CopierCpu, TheStackLeftIsKnownOnEveryThread) {
  EXPECT_GT(mtc::stack_bytes_left(), mtc::kWalkStackReserve);
  const size_t small = left_on_a_thread_of(size_t{1} << 20);
  EXPECT_GT(small, 0u);
  EXPECT_LT(small, size_t{1} << 20);
  // A quarter of a megabyte more stack leaves more: not as much under ThreadSanitizer, whose
  // runtime sizes threads' stacks its own way (155,648 bytes more in one CI run).
  const size_t larger = left_on_a_thread_of((size_t{1} << 20) + (size_t{256} << 10));
  EXPECT_GT(larger, small + (size_t{64} << 10));
}

// 1,000 levels walked on the caller's thread of a small stack ended the process; the walk now
// stops where the stack would, with an error, and leaves the thread sound.
TEST(CopierCpu, NestingDeeperThanTheThreadsStackIsAnError) {
  c10::IValue deep = at::ones({1});
  for (int i = 0; i < mtc::detail::kMaxNestingDepth; ++i) {
    c10::impl::GenericList l(c10::AnyType::get());
    l.push_back(std::move(deep));
    deep = l;
  }
  CopyOptions on_the_caller;
  on_the_caller.use_background_thread = false;
  std::string error;
  bool shallow_copied = false;
  // 96 KiB to walk in: the walk's reserve and 32 KiB, less than any 1,000 levels take.
  const size_t above_the_tls = (size_t{1} << 20) - left_on_a_thread_of(size_t{1} << 20);
  on_small_stack(above_the_tls + (size_t{96} << 10), [&] {
    try {
      start_copy(deep, kCpu, on_the_caller).get();
    } catch (const c10::Error& e) {
      error = e.what();
    }
    c10::impl::GenericList shallow(c10::AnyType::get());
    shallow.push_back(at::ones({1}));
    shallow_copied = start_copy(shallow, kCpu, on_the_caller).get().isList();
  });
  EXPECT_NE(error.find("as deep as the stack of the thread that walks it allows"),
            std::string::npos)
      << error;
  EXPECT_TRUE(shallow_copied);
  // On the engine's own threads, of full-size stacks, the same input is copied.
  EXPECT_TRUE(start_copy(deep, kCpu).get().isList());
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

TEST(CopierCpu, PinnedPoolIsNotTouchedByCpuToCpu) {
  const mtc::PinnedPoolStats before = mtc::pinned_pool_stats();
  std::vector<at::Tensor> tensors;
  const c10::IValue in = mixed_batch(tensors);
  for (int i = 0; i < 3; ++i) start_copy(in, kCpu).get();
  const mtc::PinnedPoolStats after = mtc::pinned_pool_stats();
  EXPECT_EQ(after.slab_allocations, before.slab_allocations);
  EXPECT_EQ(after.in_use_bytes, before.in_use_bytes);
}

}  // namespace
