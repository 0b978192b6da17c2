#include "runner/verify/verify.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runner/strategies/structure.h"

namespace mtc::bench {
namespace {

const c10::Device kCpu(c10::kCPU);

// {"boxes": float32 (3, 4), "meta": [int64 (5,), "name", (bool (2,), 7, 0.5)]}
c10::IValue make_batch() {
  c10::impl::GenericList meta(c10::AnyType::get());
  meta.push_back(at::arange(5, at::kLong));
  meta.push_back(std::string("name"));
  meta.push_back(
      c10::ivalue::Tuple::create({at::arange(2, at::kLong).to(at::kBool), int64_t{7}, 0.5}));
  c10::impl::GenericDict batch(c10::StringType::get(), c10::AnyType::get());
  batch.insert("boxes", at::arange(12, at::kFloat).reshape({3, 4}));
  batch.insert("meta", meta);
  return batch;
}

c10::IValue cloned(const c10::IValue& v) {
  return map_tensors(v, [](const at::Tensor& t) { return t.clone(); });
}

c10::impl::GenericDict as_dict(const c10::IValue& v) { return v.toGenericDict(); }

TEST(Verify, AFaithfulCopyPasses) {
  const c10::IValue in = make_batch();
  EXPECT_FALSE(verify_copy(in, cloned(in), kCpu));
  EXPECT_FALSE(verify_copy(in, in, kCpu));  // leaves returned as they are are fine too
}

TEST(Verify, CatchesAFlippedBit) {
  const c10::IValue in = make_batch();
  const c10::IValue out = cloned(in);
  at::Tensor boxes = as_dict(out).at("boxes").toTensor();
  static_cast<unsigned char*>(boxes.data_ptr())[17] ^= 0x01;
  const auto m = verify_copy(in, out, kCpu);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->path, "/boxes");
  EXPECT_NE(m->message.find("byte 17"), std::string::npos) << m->message;
}

TEST(Verify, CatchesAWrongDtype) {
  const c10::IValue in = make_batch();
  const c10::IValue out = cloned(in);
  as_dict(out).insert_or_assign("boxes", as_dict(in).at("boxes").toTensor().to(at::kDouble));
  const auto m = verify_copy(in, out, kCpu);
  ASSERT_TRUE(m);
  EXPECT_NE(m->message.find("dtype"), std::string::npos) << m->message;
}

TEST(Verify, CatchesAWrongShape) {
  const c10::IValue in = make_batch();
  const c10::IValue out = cloned(in);
  as_dict(out).insert_or_assign("boxes",
                                as_dict(in).at("boxes").toTensor().reshape({4, 3}).clone());
  const auto m = verify_copy(in, out, kCpu);
  ASSERT_TRUE(m);
  EXPECT_NE(m->message.find("shape"), std::string::npos) << m->message;
}

TEST(Verify, CatchesAWrongDevice) {
  const c10::IValue in = make_batch();
  const auto m = verify_copy(in, cloned(in), c10::Device(c10::kCUDA, 0));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->message, "on cpu, expected cuda:0");
}

TEST(Verify, CatchesAMissingListItem) {
  const c10::IValue in = make_batch();
  const c10::IValue out = cloned(in);
  auto meta = as_dict(out).at("meta").toList();
  meta.erase(meta.begin());
  const auto m = verify_copy(in, out, kCpu);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->path, "/meta");
  EXPECT_NE(m->message.find("list of 2 items, expected 3"), std::string::npos) << m->message;
}

TEST(Verify, CatchesARenamedKey) {
  const c10::IValue in = make_batch();
  c10::impl::GenericDict out(c10::StringType::get(), c10::AnyType::get());
  out.insert("boxes", as_dict(in).at("boxes"));
  out.insert("metadata", as_dict(in).at("meta"));
  const auto m = verify_copy(in, out, kCpu);
  ASSERT_TRUE(m);
  EXPECT_NE(m->message.find("key 'metadata'"), std::string::npos) << m->message;
}

TEST(Verify, CatchesAChangedContainerKind) {
  const c10::IValue in = make_batch();
  const c10::IValue out = cloned(in);
  const auto tuple = as_dict(out).at("meta").toList().get(2).toTupleRef().elements();
  c10::impl::GenericList as_list(c10::AnyType::get());
  for (const auto& item : tuple) as_list.push_back(item);
  as_dict(out).at("meta").toList().set(2, as_list);
  const auto m = verify_copy(in, out, kCpu);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->path, "/meta/2");
  EXPECT_NE(m->message.find("expected a Tuple"), std::string::npos) << m->message;
}

TEST(Verify, CatchesATensorReplacedByAValue) {
  const c10::IValue in = make_batch();
  const c10::IValue out = cloned(in);
  as_dict(out).insert_or_assign("boxes", int64_t{3});
  const auto m = verify_copy(in, out, kCpu);
  ASSERT_TRUE(m);
  EXPECT_NE(m->message.find("expected a Tensor"), std::string::npos) << m->message;
}

TEST(Verify, ComparesPassthroughLeaves) {
  const c10::IValue in = make_batch();
  const c10::IValue out = cloned(in);
  as_dict(out).at("meta").toList().set(1, std::string("other"));
  const auto m = verify_copy(in, out, kCpu);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->path, "/meta/1");
}

TEST(Verify, NanLeavesCompareBitwise) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(verify_copy(c10::IValue(nan), c10::IValue(nan), kCpu));
  at::Tensor t = at::arange(4, at::kFloat);
  t.data_ptr<float>()[1] = std::nanf("");
  EXPECT_FALSE(verify_copy(t, t.clone(), kCpu));
}

}  // namespace
}  // namespace mtc::bench
