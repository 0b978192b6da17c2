// The torch.save reader on arbitrary bytes: a batch or a ConfigError, nothing else.
#include <ATen/core/ivalue.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "errors.h"
#include "fuzz_input_file.h"
#include "workload/saved_batch.h"

// libtorch's unpickler takes sizes from the file (a memo index of 2^31 resizes its memo table to
// 32 GiB). A normal build then throws std::bad_alloc, which load_saved_batch reports as a
// ConfigError (exit 2); AddressSanitizer's operator new aborts instead of throwing. These
// replacements bring back the normal behaviour for requests no 64 KiB input can justify, so the
// fuzzer goes on looking for real faults. Memory still comes from (and goes back to) the
// sanitizer's malloc.
namespace {
constexpr std::size_t kLargestAllocation = std::size_t{1} << 30;
void* allocate(std::size_t size) {
  void* p = size <= kLargestAllocation ? std::malloc(size == 0 ? 1 : size) : nullptr;
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace
// Every unaligned form, so that what one allocates another frees (the aligned ones stay the
// sanitizer's, a matched set of their own).
void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return size <= kLargestAllocation ? std::malloc(size == 0 ? 1 : size) : nullptr;
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mtc::bench::fuzzing::InputFile file(".pt");
  try {
    (void)mtc::bench::load_saved_batch(file.write(data, size));
  } catch (const mtc::bench::ConfigError&) {
  }
  return 0;
}
