// Completion's hold on pinned staging, over plain host memory (fake_slabs.h): a held block goes
// back to its pool once the copy is done, and is not lost when there is no room to hold it. No
// GPU needed: a completion without events has nothing to wait for.
#include "detail/completion.h"

#include <gtest/gtest.h>

#include <new>

#include "detail/pinned_pool.h"
#include "failing_new.h"
#include "fake_slabs.h"

namespace mtc::detail {
namespace {

using mtc::test::NextAllocationFails;
using test::FakeSlabs;

class CompletionTest : public test::FakeSlabsTest {};

TEST_F(CompletionTest, HeldStagingGoesBackWhenTheCompletionFinishes) {
  PinnedPool pool(FakeSlabs::source());
  {
    Completion completion;
    completion.hold(pool.acquire(1000));
    completion.hold(pool.acquire(3000));
    EXPECT_EQ(pool.stats().in_use_bytes, 1024 + 3072);
  }
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
}

TEST_F(CompletionTest, ABlockItHasNoRoomToHoldGoesBackToItsPool) {
  if (!NextAllocationFails::available()) GTEST_SKIP() << NextAllocationFails::kUnavailable;
  PinnedPool pool(FakeSlabs::source());
  {
    Completion completion;
    const PinnedBlock block = pool.acquire(1000);
    bool threw = false;
    bool fired = false;
    {
      const NextAllocationFails failure;  // the first growth of the completion's staging list
      try {
        completion.hold(block);
      } catch (const std::bad_alloc&) {
        threw = true;
      }
      fired = failure.fired();
    }
    EXPECT_TRUE(fired);
    EXPECT_TRUE(threw);
    // Not counted as in use for the life of the process ...
    EXPECT_EQ(pool.stats().in_use_bytes, 0);
    // ... and not given back a second time when the completion finishes (in use would go
    // below 0).
    completion.hold(pool.acquire(2000));
  }
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
}

}  // namespace
}  // namespace mtc::detail
