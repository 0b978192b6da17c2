// Makes an allocation of the calling thread fail, for tests of what code does when memory runs
// out at a point where it cannot be made to run out for real (a vector's growth, say). The test
// program replaces the global operator new for this (failing_new.cpp), except under a sanitizer,
// whose runtime replaces it itself: available() is false there, and tests that need a failure
// skip.
#pragma once

namespace mtc::test {

class NextAllocationFails {
 public:
  static bool available();
  // Why a test that needs a failure skips where it is not available.
  static constexpr const char* kUnavailable =
      "the sanitizer's runtime owns operator new: no allocation can be made to fail";

  // The calling thread's next operator new, and only that one, throws std::bad_alloc.
  NextAllocationFails();
  NextAllocationFails(const NextAllocationFails&) = delete;  // arms the thread's state once
  NextAllocationFails& operator=(const NextAllocationFails&) = delete;
  // Disarms what is still armed, so nothing after the scope fails.
  ~NextAllocationFails();

  // Whether the failure has happened.
  bool fired() const;
};

}  // namespace mtc::test
