// The one reader of the JSON report (docs/report.md, results/report.schema.json): a document
// back into the Report model, the inverse of report_to_json (json_reporter.cpp). `compare`
// (compare/report_cases.h) and the merge of --processes (runner/commands/processes.h) both read
// through it, as nvbench's compare, histogram and plot scripts share one reader. Pure (no ATen).
//
// Strict: what it reads must have the schema's type, and what its users need must be there;
// the first problem is a ConfigError naming the file and the JSON pointer of the value.
// Required: schema_version (2), ab, context.host and context.date, runs; in each run
// config.name, workload.hash and results; in each result device, direction, strategy, pattern
// and status, and for an ok one wall_s.median, interval_s, rounds (count, median_s, process)
// and speedup_vs_to. Everything else is read when present and not null and keeps the model's
// default otherwise: reports of schema version 2 written before a field was added lack it
// (paired_steps, host_canary, ...). Fields the reader does not know are ignored, as the schema
// asks of every reader. A null where a number belongs reads as NaN (an unbounded interval's
// high edge as +inf), which the JSON reporter writes back as null.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "report/report.h"

namespace mtc::bench {

// The largest report read. A report with --raw-samples holds every sample (up to a million a
// case, each a few numbers of up to 25 bytes), so reports run far past a config's 16 MiB; past
// this a file is refused before any of it is read, as a config over its limit is.
inline constexpr uint64_t kMaxReportBytes = uint64_t{1} << 30;

// The JSON document at `path`, not yet read as a report. Throws ConfigError when it is not a
// regular file (a named pipe would block, a device never end), is larger than kMaxReportBytes,
// nests deeper than a report can, or is not JSON.
nlohmann::json read_report_document(const std::string& path);

// Reads the report at `path`: read_report_document, then the document as a report. Throws
// ConfigError (errors.h) when it cannot be opened, is not JSON, or is not a report this reader
// understands.
Report read_report(const std::string& path);

// The same for a document already parsed; `file` names it in errors.
Report read_report(const nlohmann::json& doc, const std::string& file);

}  // namespace mtc::bench
