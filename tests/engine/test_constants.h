// The devices and sizes the engine's tests name, with a GPU or without one.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

namespace mtc::test {

inline constexpr int64_t kKiB = 1024;
inline constexpr int64_t kMiB = 1024 * 1024;
inline const c10::Device kCpu(c10::kCPU);
inline const c10::Device kCuda0(c10::kCUDA, 0);
inline const c10::Device kCuda1(c10::kCUDA, 1);

}  // namespace mtc::test
