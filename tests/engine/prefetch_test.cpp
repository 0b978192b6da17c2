// The walk's prefetches (prefetch.h): Lookahead asks for each child's header and storage once,
// at most kHeadersAhead and kStoragesAhead children ahead of the walk, never past the end, and
// nothing while turned off; header() and storage() take every kind of value a structure holds.
#include "detail/prefetch.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/ops/empty.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace {

namespace prefetch = mtc::detail::prefetch;

// Children of every kind: tensors (one undefined, one a view), containers, a string, an int.
std::vector<c10::IValue> children(size_t n) {
  std::vector<c10::IValue> out;
  for (size_t i = 0; i < n; ++i) {
    switch (i % 6) {
      case 0:
        out.emplace_back(at::empty({3}));
        break;
      case 1:
        out.emplace_back(at::Tensor());
        break;
      case 2:
        out.emplace_back(at::empty({4, 2}).select(1, 0));
        break;
      case 3:
        out.emplace_back(c10::List<int64_t>({1, 2}));
        break;
      case 4:
        out.emplace_back(std::string("s"));
        break;
      default:
        out.emplace_back(static_cast<int64_t>(i));
        break;
    }
  }
  return out;
}

// Runs a Lookahead over `n` children, walking `walked` of them; returns how often each child's
// value was asked for (a header and a storage each make one ask).
std::vector<int> asks(size_t n, size_t walked) {
  const std::vector<c10::IValue> items = children(n);
  std::vector<int> count(n);
  const auto value = [&](const c10::IValue& v) -> const c10::IValue& {
    const auto k = static_cast<size_t>(&v - items.data());
    EXPECT_LT(k, n) << "asked past the end";
    if (k < n) ++count[k];
    return v;
  };
  prefetch::Lookahead ahead(items.begin(), items.end(), value);
  for (size_t k = 0; k < walked; ++k) ahead.advance();
  return count;
}

class PrefetchTest : public ::testing::Test {
 protected:
  void TearDown() override { prefetch::set_enabled(true); }
};

TEST_F(PrefetchTest, ASmallContainersChildrenAreAllAskedForAtItsStart) {
  for (size_t n : {0, 1, 5, 8}) {
    SCOPED_TRACE(n);
    EXPECT_EQ(asks(n, 0), std::vector<int>(n, 2));
    EXPECT_EQ(asks(n, n), std::vector<int>(n, 2));
  }
}

TEST_F(PrefetchTest, ALargeContainersChildrenAreAskedForABoundedDistanceAhead) {
  constexpr size_t n = 40;
  const std::vector<int> at_start = asks(n, 0);
  for (size_t k = 0; k < n; ++k) {
    const int expected =
        (k < prefetch::kHeadersAhead ? 1 : 0) + (k < prefetch::kStoragesAhead ? 1 : 0);
    EXPECT_EQ(at_start[k], expected) << "child " << k;
  }
  // After walking 10 children, headers reach 10 + 16 and storages 10 + 8 children.
  const std::vector<int> after_ten = asks(n, 10);
  for (size_t k = 0; k < n; ++k) {
    const int expected =
        (k < 10 + prefetch::kHeadersAhead ? 1 : 0) + (k < 10 + prefetch::kStoragesAhead ? 1 : 0);
    EXPECT_EQ(after_ten[k], expected) << "child " << k;
  }
  EXPECT_EQ(asks(n, n), std::vector<int>(n, 2));
}

TEST_F(PrefetchTest, NothingIsAskedForWhileOff) {
  prefetch::set_enabled(false);
  EXPECT_FALSE(prefetch::enabled());
  EXPECT_EQ(asks(20, 20), std::vector<int>(20, 0));
}

TEST_F(PrefetchTest, DictEntriesAreWalkedThroughTheirValues) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  for (int i = 0; i < 20; ++i) dict.insert(std::to_string(i), at::empty({i + 1}));
  int asked = 0;
  prefetch::Lookahead ahead(dict.begin(), dict.end(), [&](const auto& entry) -> const c10::IValue& {
    ++asked;
    return entry.value();
  });
  for (size_t k = 0; k < dict.size(); ++k) ahead.advance();
  EXPECT_EQ(asked, 40);
}

}  // namespace
