// Numbers as the tables and summaries print them for people.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace mtc::bench {

// 1234567 -> "1,234,567".
inline std::string with_commas(int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

// A byte count in the largest binary unit below it: "150.0 KiB", "915.7 MiB", "1.50 GiB".
inline std::string human_bytes(int64_t n) {
  constexpr int64_t kKiB = 1024;
  constexpr int64_t kMiB = 1024 * kKiB;
  if (n < kKiB) return fmt::format("{} B", n);
  if (n < kMiB) return fmt::format("{:.1f} KiB", static_cast<double>(n) / kKiB);
  if (n < 1024 * kMiB) return fmt::format("{:.1f} MiB", static_cast<double>(n) / kMiB);
  return fmt::format("{:.2f} GiB", static_cast<double>(n) / (1024.0 * kMiB));
}

}  // namespace mtc::bench
