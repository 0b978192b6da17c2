#include "failing_new.h"

#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MTC_SANITIZER_OWNS_NEW 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define MTC_SANITIZER_OWNS_NEW 1
#endif
#endif

namespace {
// Per thread: the test's allocations fail, not those of the workers and libraries around it.
thread_local bool fail_next = false;
thread_local bool failed = false;
}  // namespace

#ifndef MTC_SANITIZER_OWNS_NEW
// What the library's operator new does, with the armed failure in front; and the delete that
// matches it (the library's other forms of both forward to these).
void* operator new(std::size_t bytes) {
  if (fail_next) {
    fail_next = false;
    failed = true;
    throw std::bad_alloc();
  }
  for (;;) {
    if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
    const std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace mtc::test {

bool NextAllocationFails::available() {
#ifdef MTC_SANITIZER_OWNS_NEW
  return false;
#else
  return true;
#endif
}

NextAllocationFails::NextAllocationFails() {
  failed = false;
  fail_next = true;
}

NextAllocationFails::~NextAllocationFails() { fail_next = false; }

bool NextAllocationFails::fired() const { return failed; }

}  // namespace mtc::test
