// User-written text as an error message quotes it: whole when short, else its start and its
// length. A 5,000-byte --set value made a 15 KB error line (the value quoted three times), which
// buries the reason; the start is what tells the user which value it was.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "utf8_prefix.h"

namespace mtc::bench {

// What a value, a name or a JSON key shows of itself.
inline constexpr size_t kShownBytes = 60;
// What a file path or a JSON pointer shows: more, as it is a place the user goes to, and its
// tail (a file's name, a pointer's last key) is what tells it from its neighbours. Still
// bounded, so a pasted blob given as a path keeps the message short.
inline constexpr size_t kShownPathBytes = 200;

// `text` with its control characters written as escapes (\n, \r, \t, \xNN): a newline in a value
// (`--direction "$(cat file)"`) split the one-line error in two, the second line looking like
// another message.
inline std::string without_control_characters(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  return out;
}

// `text` as is when at most `limit` bytes; else its first `limit` bytes, cut back to a whole
// UTF-8 character, then "... (N bytes)". Short text prints exactly as it did before the limit,
// unless it holds a control character, which is escaped (without_control_characters).
inline std::string shown(std::string_view text, size_t limit = kShownBytes) {
  if (text.size() <= limit) return without_control_characters(text);
  return without_control_characters(utf8_prefix(text, limit)) + "... (" +
         std::to_string(text.size()) + " bytes)";
}

// A file path, a JSON pointer or text that names a place (a JSON parser's message): shown with
// kShownPathBytes.
inline std::string shown_path(std::string_view text) { return shown(text, kShownPathBytes); }

// How many items of a list an error message names: a config declaring 10,000 parameters, or
// reports from as many hosts, made a message of every name, the reason lost at its end.
inline constexpr size_t kShownItems = 10;

// The items of `items` (strings, or anything std::string_view takes) joined by `separator`, each
// shown(): at most kShownItems, then "... (N in all)".
template <typename Range>
std::string shown_list(const Range& items, std::string_view separator = ", ") {
  std::string out;
  size_t count = 0;
  for (const auto& item : items) {
    if (count < kShownItems) {
      if (count > 0) out += separator;
      out += shown(std::string_view(item));
    }
    ++count;
  }
  if (count > kShownItems) out += "... (" + std::to_string(count) + " in all)";
  return out;
}

}  // namespace mtc::bench
