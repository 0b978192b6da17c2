// Cutting text short without cutting a character in half: half of a UTF-8 character is not
// valid UTF-8, and a JSON writer refuses it (nlohmann's throws unless told to replace).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mtc::bench {

// The first `bytes` bytes of `text`, moved back to the start of a UTF-8 character.
inline std::string utf8_prefix(std::string_view text, size_t bytes) {
  if (text.size() <= bytes) return std::string(text);
  while (bytes > 0 && (static_cast<unsigned char>(text[bytes]) & 0xC0) == 0x80) --bytes;
  return std::string(text.substr(0, bytes));
}

}  // namespace mtc::bench
