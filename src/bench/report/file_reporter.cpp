#include "report/file_reporter.h"

namespace mtc::bench {

void FileReporter::end(const Report& report) {
  reporter_->end(report);
  file_.commit(text_.str());
}

}  // namespace mtc::bench
