// A SlabSource over aligned host memory that counts what it hands out and takes back, so the
// pinned pool's bookkeeping is tested on machines without a GPU.
#pragma once

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <set>
#include <vector>

#include "detail/pinned_pool.h"

namespace mtc::detail::test {

struct FakeSlabs {
  static inline std::mutex mutex;
  static inline std::vector<int64_t> allocated_sizes;
  static inline std::set<void*> live;
  static inline int frees = 0;
  static inline bool fail_next = false;

  static void reset() {
    std::lock_guard<std::mutex> lock(mutex);
    allocated_sizes.clear();
    live.clear();
    frees = 0;
    fail_next = false;
  }
  static void* allocate(int64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    if (fail_next) {
      fail_next = false;
      TORCH_CHECK(false, "fake slab allocation failure");
    }
    // aligned_alloc wants a multiple of the alignment.
    void* p = std::aligned_alloc(4096, static_cast<size_t>((bytes + 4095) / 4096 * 4096));
    if (p == nullptr) throw std::bad_alloc();
    allocated_sizes.push_back(bytes);
    live.insert(p);
    return p;
  }
  static void free(void* base) noexcept {
    std::lock_guard<std::mutex> lock(mutex);
    live.erase(base);
    ++frees;
    std::free(base);
  }
  static SlabSource source() { return SlabSource{&FakeSlabs::allocate, &FakeSlabs::free}; }
};

// A fixture whose tests start and end with FakeSlabs' books cleared.
class FakeSlabsTest : public ::testing::Test {
 protected:
  void SetUp() override { FakeSlabs::reset(); }
  void TearDown() override { FakeSlabs::reset(); }
};

}  // namespace mtc::detail::test
