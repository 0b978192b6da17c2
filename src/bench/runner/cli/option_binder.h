// Declares a command-line option once: its names, its help and the field it fills. CLI11
// collects the option's text as written; after parsing, finish() converts the text of each
// option given and stores it in its field. A field thus stays as it was (unset: "as the config
// says") unless its option appears.
//
// Why not CLI11's binding of std::optional with ->transform: the conversions are parse.h's,
// whose UsageErrors name the text at fault in the words the docs and tests use, and converting
// after CLI11 is done keeps --help and CLI11's own errors first, whatever else is on the line.
// It also behaves the same with CLI11 2.1 (Debian) and 2.4 (the GPU host).
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "errors.h"
#include "runner/cli/parse.h"
#include "workload/bench_settings.h"

namespace mtc::bench {

// How every option refuses an empty value: `--json "$REPORT"` with REPORT unset wrote no report
// and said nothing, `--warmup "$N"` said "expected a whole number".
inline constexpr const char* kEmptyValue = "an empty value (an unset variable?)";

// For options whose empty value would read as "not given".
inline const CLI::Validator kNotEmpty(
    [](const std::string& value) {
      return value.empty() ? std::string(kEmptyValue) : std::string();
    },
    "");

// For the paths of reports: not empty (kNotEmpty), and not "-", which other tools read as
// standard output and this one wrote as a file named "-".
inline const CLI::Validator kReportPath(
    [](const std::string& value) {
      if (value.empty()) return std::string(kEmptyValue);
      if (value == "-") {
        return std::string(
            "reports are not written to standard output; give a file (./- if "
            "that is its name)");
      }
      return std::string();
    },
    "");

// Text that says nothing: empty or only blanks, as `--warmup "$N"` gives with N unset.
inline bool blank(std::string_view text) {
  return text.find_first_not_of(" \t\n\r") == std::string_view::npos;
}

// The long name of an option declared as "-s,--long" (or "--long"), as its errors name it.
inline std::string long_name(const std::string& names) {
  return names.substr(names.rfind(',') + 1);
}

class OptionBinder {
 public:
  explicit OptionBinder(CLI::App& app) : app_(app) {}

  // `names` fills `field` with convert(text). `Text` is what CLI11 collects: a number, a bool
  // or a string, or a vector of them for a list or a repeatable option.
  template <typename Text, typename Field, typename Convert>
  CLI::Option* add(const std::string& names, Field& field, Convert convert,
                   const std::string& help) {
    auto text = std::make_shared<Text>();
    CLI::Option* option = app_.add_option(names, *text, help);
    const std::string name = long_name(names);
    finishers_.push_back([option, text, &field, name, convert = std::move(convert)] {
      if (option->count() == 0) return;
      // Every option that converts its text refuses an empty one as kNotEmpty does.
      bool empty = false;
      if constexpr (std::is_same_v<Text, std::string>) {
        empty = blank(*text);
      } else if constexpr (std::is_same_v<Text, std::vector<std::string>>) {
        empty =
            std::any_of(text->begin(), text->end(), [](const std::string& t) { return blank(t); });
      }
      if (empty) throw UsageError(name + ": " + kEmptyValue);
      try {
        field = convert(*text);
      } catch (const UsageError& e) {
        // The shared parsers (parse_bytes: "0: byte count out of range") do not know the option.
        if (std::string_view(e.what()).starts_with("--")) throw;
        throw UsageError(name + " " + e.what());
      }
    });
    return option;
  }

  // `names` fills `field` with the value as CLI11 read it.
  template <typename T>
  CLI::Option* add(const std::string& names, std::optional<T>& field, const std::string& help) {
    return add<T>(
        names, field, [](const T& value) { return value; }, help);
  }

  // `names` fills `field` with the number written, refused (UsageError naming the option and the
  // text) outside `bounds`, the config's bounds of the same setting. Read by parse_within, not by
  // CLI11, which clamped a whole number too large for its type and refused "nan" in its words.
  template <typename T>
  CLI::Option* add_within(const std::string& names, std::optional<T>& field,
                          const SettingBounds<T>& bounds, const std::string& help) {
    const std::string option = long_name(names);
    return add<std::string>(
        names, field,
        [option, bounds](const std::string& text) { return parse_within(option, text, bounds); },
        help);
  }

  // `names` fills `field` with on or off as written (parse_on_off: true/false, yes/no, ... too),
  // refused naming the option otherwise.
  CLI::Option* add_on_off(const std::string& names, std::optional<bool>& field,
                          const std::string& help) {
    const std::string option = long_name(names);
    return add<std::string>(
               names, field,
               [option](const std::string& text) { return parse_on_off(option, text); }, help)
        ->type_name("on|off");
  }

  // Converts and stores what was given, in the order the options were declared; throws
  // UsageError.
  void finish() const {
    for (const std::function<void()>& finisher : finishers_) finisher();
  }

  // Marks `option` as one the parent of --processes keeps to itself (parent_only_options()).
  CLI::Option* parent_only(CLI::Option* option) {
    parent_only_.push_back(option);
    return option;
  }
  const std::vector<CLI::Option*>& parent_only() const { return parent_only_; }

 private:
  CLI::App& app_;
  std::vector<std::function<void()>> finishers_;
  std::vector<CLI::Option*> parent_only_;
};

}  // namespace mtc::bench
