// The project's one NVTX domain, `mtc`, and the helpers every range of the project goes through.
// Building with -DMTC_ENABLE_NVTX=OFF defines MTC_NVTX_DISABLE for mtc::copier and whatever
// links it, which compiles all of it out. It is the project's own switch, not NVTX_DISABLE: that
// one would also compile out the ranges of a program that links the engine.
#pragma once

#include <cstdint>

#ifndef MTC_NVTX_DISABLE

#include <nvtx3/nvtx3.hpp>

namespace mtc::nvtx {

struct domain {
  static constexpr char const* name{"mtc"};
};

using scoped_range = nvtx3::scoped_range_in<domain>;
using registered_string = nvtx3::registered_string_in<domain>;

// A range whose message is a registered string (cheap on hot paths) and whose payload is a
// number (a sample or chunk index), so Nsight Systems shows both.
inline nvtx3::event_attributes attributes(registered_string const& message, int64_t payload) {
  return nvtx3::event_attributes{message, nvtx3::payload{payload}};
}

}  // namespace mtc::nvtx

// A range in the `mtc` domain named after the enclosing function.
#define MTC_FUNC_RANGE() NVTX3_FUNC_RANGE_IN(::mtc::nvtx::domain)

// A range in the `mtc` domain with a registered message, for hot paths:
//   MTC_RANGE(stage, "stage");
#define MTC_RANGE(var, text)                                       \
  static ::mtc::nvtx::registered_string const var##_message{text}; \
  ::mtc::nvtx::scoped_range const var##_range { var##_message }

#else  // MTC_NVTX_DISABLE

namespace mtc::nvtx {

// The same names with nothing behind them: code that opens ranges compiles either way.
struct registered_string {
  explicit constexpr registered_string(char const*) noexcept {}
};
struct event_attributes {};
inline constexpr event_attributes attributes(registered_string const&, int64_t) noexcept {
  return {};
}
// Like nvtx3's ranges, meant to be declared and never named again.
struct [[maybe_unused]] scoped_range {
  template <typename... Args>
  explicit constexpr scoped_range(Args const&...) noexcept {}
};

}  // namespace mtc::nvtx

#define MTC_FUNC_RANGE() (void)0
#define MTC_RANGE(var, text) (void)0

#endif  // MTC_NVTX_DISABLE

namespace mtc::nvtx {

// Names the calling thread in profiler timelines (and for the OS, with NVTX compiled out too).
void name_current_thread(char const* name);

}  // namespace mtc::nvtx
