// A reporter whose output goes to a report file, written whole when the report ends
// (report_file.h): a run that dies leaves the file as it was. The file is created at once, so
// a path that cannot be written fails before anything is measured.
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "report/report_file.h"
#include "report/reporter.h"

namespace mtc::bench {

class FileReporter final : public Reporter {
 public:
  // A reporter of type R, constructed on the stream it writes to, that writes to `path` (given
  // with `option`, which errors name).
  template <class R>
  static std::unique_ptr<FileReporter> to_file(std::string option, std::string path) {
    std::unique_ptr<FileReporter> reporter(new FileReporter(std::move(option), std::move(path)));
    reporter->reporter_ = std::make_unique<R>(reporter->text_);
    return reporter;
  }

  void begin(const nlohmann::json& context) override { reporter_->begin(context); }
  void run(const RunSection& run) override { reporter_->run(run); }
  // The reporter's end, then the file written whole (std::runtime_error naming it on failure).
  void end(const Report& report) override;

 private:
  FileReporter(std::string option, std::string path) : file_(std::move(option), std::move(path)) {}

  ReportFile file_;
  std::ostringstream text_;
  std::unique_ptr<Reporter> reporter_;
};

}  // namespace mtc::bench
