// Reporters render a Report; console, JSON and markdown are siblings behind one interface.
#pragma once

#include "report/report.h"

#include <memory>
#include <ostream>

namespace mtc::bench {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void write(const Report& report, std::ostream& out) const = 0;
};

// The fixed-width table for a terminal.
class ConsoleReporter final : public Reporter {
 public:
  void write(const Report& report, std::ostream& out) const override;
  // The pieces of write(), for printing each run as soon as it is measured.
  void write_environment(const nlohmann::json& context, std::ostream& out) const;
  void write_run(const RunSection& run, std::ostream& out) const;
};

// The machine-readable report documented in docs/report.md and results/report.schema.json.
class JsonReporter final : public Reporter {
 public:
  void write(const Report& report, std::ostream& out) const override;
};

// The same table as the console, for pull requests and result folders.
class MarkdownReporter final : public Reporter {
 public:
  void write(const Report& report, std::ostream& out) const override;
};

// The JSON document JsonReporter writes. Non-finite numbers become null, so every number in it
// parses in any reader.
nlohmann::json report_to_json(const Report& report);

// Replaces every NaN or infinity in `value` (recursively) with null.
void replace_non_finite(nlohmann::json& value);

}  // namespace mtc::bench
