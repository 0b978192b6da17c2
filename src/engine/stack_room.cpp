#include "mtc/stack_room.h"

#include <pthread.h>

#include <cstdint>

namespace mtc {
namespace {

// The lowest address of the calling thread's stack (stacks grow down on every platform the
// engine builds for), 0 where it cannot be read.
uintptr_t read_stack_low() noexcept {
  pthread_attr_t attributes;
  if (pthread_getattr_np(pthread_self(), &attributes) != 0) return 0;
  void* low = nullptr;
  size_t size = 0;
  const int read = pthread_attr_getstack(&attributes, &low, &size);
  pthread_attr_destroy(&attributes);
  return read == 0 ? reinterpret_cast<uintptr_t>(low) : 0;
}

constexpr uintptr_t kNotRead = 1;

}  // namespace

size_t stack_bytes_left() noexcept {
  thread_local uintptr_t low = kNotRead;
  if (low == kNotRead) low = read_stack_low();
  if (low == 0) return SIZE_MAX;
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  return here > low ? here - low : 0;
}

}  // namespace mtc
