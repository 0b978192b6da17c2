// Reporters: the outputs of an invocation, told of it as it goes, as Google Benchmark's
// reporters are (ReportContext, ReportRuns, Finalize) and nvbench's printers: `begin` once the
// environment is known, `run` as soon as each run (a config, a sweep point) is measured, `end`
// with the whole report (exit code, host state, interrupted). Each output uses the calls it
// needs: the console prints as the run goes, JSON and markdown write the whole at the end
// (file_reporter.h puts them in files). A multiplex drives several at once, so every output of
// a run goes through this one interface; `compare` drives its outputs through the same
// lifecycle (compare/compare_output.h).
#pragma once

#include <exception>
#include <memory>
#include <ostream>
#include <utility>
#include <vector>

#include "report/report.h"

namespace mtc::bench {

// The lifecycle, for what a Context, each Section and the Whole are to one kind of output.
template <class Context, class Section, class Whole>
class BasicReporter {
 public:
  virtual ~BasicReporter() = default;
  virtual void begin(const Context& /*context*/) {}
  virtual void run(const Section& /*section*/) {}
  virtual void end(const Whole& /*whole*/) {}
};

// Several reporters driven as one, in the order they were added.
template <class Context, class Section, class Whole>
class BasicMultiplexReporter final : public BasicReporter<Context, Section, Whole> {
 public:
  using Member = BasicReporter<Context, Section, Whole>;

  void add(std::unique_ptr<Member> reporter) { reporters_.push_back(std::move(reporter)); }

  void begin(const Context& context) override {
    for (const auto& reporter : reporters_) reporter->begin(context);
  }
  void run(const Section& section) override {
    for (const auto& reporter : reporters_) reporter->run(section);
  }
  // Every output is ended even when one fails (a report file whose folder went away): the
  // others are still written, and the first failure is thrown after them.
  void end(const Whole& whole) override {
    std::exception_ptr first_failure;
    for (const auto& reporter : reporters_) {
      try {
        reporter->end(whole);
      } catch (...) {
        if (!first_failure) first_failure = std::current_exception();
      }
    }
    if (first_failure) std::rethrow_exception(first_failure);
  }

 private:
  std::vector<std::unique_ptr<Member>> reporters_;
};

// A run's outputs: begin(context), run(each RunSection), end(Report).
using Reporter = BasicReporter<nlohmann::json, RunSection, Report>;
using MultiplexReporter = BasicMultiplexReporter<nlohmann::json, RunSection, Report>;

// Drives `reporter` through a finished report: begin, each run, end.
void write_report(Reporter& reporter, const Report& report);

// The fixed-width table for a terminal: the environment line at the start, each run's table as
// soon as it is measured, the profile-mode warning at the end.
class ConsoleReporter final : public Reporter {
 public:
  explicit ConsoleReporter(std::ostream& out) : out_(out) {}
  void begin(const nlohmann::json& context) override;
  void run(const RunSection& run) override;
  void end(const Report& report) override;

 private:
  std::ostream& out_;
};

// The machine-readable report documented in docs/report.md and results/report.schema.json,
// written whole at the end.
class JsonReporter final : public Reporter {
 public:
  explicit JsonReporter(std::ostream& out) : out_(out) {}
  void end(const Report& report) override;

 private:
  std::ostream& out_;
};

// The same table as the console, for pull requests and result folders, written whole at the
// end.
class MarkdownReporter final : public Reporter {
 public:
  explicit MarkdownReporter(std::ostream& out) : out_(out) {}
  void end(const Report& report) override;

 private:
  std::ostream& out_;
};

// The JSON document JsonReporter writes. Non-finite numbers become null, so every number in it
// parses in any reader.
nlohmann::json report_to_json(const Report& report);

// Replaces every NaN or infinity in `value` (recursively) with null.
void replace_non_finite(nlohmann::json& value);

}  // namespace mtc::bench
