// The project's one NVTX domain, `mtc`, and the helpers every range goes through.
// Building with -DMTC_ENABLE_NVTX=OFF defines NVTX_DISABLE, which compiles all of it out.
#pragma once

#include <nvtx3/nvtx3.hpp>

#include <cstdint>

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

// Names the calling thread in profiler timelines.
void name_current_thread(char const* name);

}  // namespace mtc::nvtx

// A range in the `mtc` domain named after the enclosing function.
#define MTC_FUNC_RANGE() NVTX3_FUNC_RANGE_IN(::mtc::nvtx::domain)

// A range in the `mtc` domain with a registered message, for hot paths:
//   MTC_RANGE(stage, "stage");
#define MTC_RANGE(var, text)                                                                 \
  static ::mtc::nvtx::registered_string const var##_message{text};                          \
  ::mtc::nvtx::scoped_range const var##_range { var##_message }
