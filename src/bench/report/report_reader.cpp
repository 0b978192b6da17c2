#include "report/report_reader.h"

#include <fmt/format.h>

#include <limits>

#include "errors.h"
#include "files.h"
#include "report/json_node.h"
#include "shown.h"

namespace mtc::bench {
namespace {

using json = nlohmann::json;

// Sets `to` from the member `key` of an object when it is there; null reads as NaN.
void read_number(const JsonNode& object, const char* key, double& to) {
  if (object.object().contains(key)) to = object[key].number_or_nan();
}

// wall_s, caller_blocked_s, ...: every figure optional, as a summary of no samples is all zeros.
Summary read_summary(const JsonNode& node) {
  Summary s;
  if (const auto count = node.find("count")) s.count = count->integer();
  const std::pair<const char*, double*> figures[] = {
      {"min", &s.min},   {"p10", &s.p10},     {"median", &s.median},
      {"mean", &s.mean}, {"stdev", &s.stdev}, {"p90", &s.p90},
      {"p99", &s.p99},   {"max", &s.max},     {"noise", &s.noise}};
  for (const auto& [key, figure] : figures) read_number(node, key, *figure);
  return s;
}

std::optional<Summary> optional_summary(const JsonNode& entry, const char* key) {
  const auto node = entry.find(key);
  return node ? std::optional<Summary>(read_summary(*node)) : std::nullopt;
}

Interval read_interval(const JsonNode& node) {
  // An unbounded interval's high edge is written as null (json_reporter.cpp).
  return Interval{node["low"].number(),
                  node["high"].number_or_null().value_or(std::numeric_limits<double>::infinity()),
                  node["level"].number()};
}

// The per-round medians and their processes, what an in-process A/B pairs round by round.
void read_rounds(const JsonNode& node, RoundsSummary& r) {
  r.rounds = node["count"].integer();
  const JsonNode medians = node["median_s"];
  const JsonNode processes = node["process"];
  if (!medians.value().is_array() || !processes.value().is_array() ||
      medians.size() != processes.size()) {
    node.fail("median_s and process must be arrays of one length");
  }
  // The writer counts the rounds it lists (stats/rounds.h): another count is a damaged report,
  // whose intervals were computed from rounds that are not there.
  if (r.rounds < 0 || static_cast<uint64_t>(r.rounds) != medians.size()) {
    node["count"].fail(fmt::format("{} rounds, but median_s lists {}", r.rounds, medians.size()));
  }
  for (size_t i = 0; i < medians.size(); ++i) {
    // 0 is a round without samples (the in-process pairing skips it).
    const JsonNode median = medians.at(i);
    if (!median.value().is_number() || !(median.number() >= 0.0)) {
      median.fail("expected a number >= 0");
    }
    r.medians.push_back(median.number());
    r.process.push_back(processes.at(i).small_integer());
  }
  if (const auto samples = node.find("samples")) {
    if (samples->size() != medians.size())
      samples->fail(
          fmt::format("{} values, but median_s lists {} rounds", samples->size(), medians.size()));
    for (size_t i = 0; i < samples->size(); ++i) r.samples.push_back(samples->at(i).integer());
  }
}

std::optional<RatioEstimate> read_speedup(const JsonNode& node) {
  if (node.is_null()) return std::nullopt;
  if (!node.value().is_object()) {
    node.fail("expected an object or null (a bare number is schema v1)");
  }
  RatioEstimate r;
  r.estimate = node["estimate"].number();
  r.low = node["low"].number_or_null();
  r.high = node["high"].number_or_null();
  r.level = node["level"].number();
  r.pairs = node["rounds"].integer();
  return r;
}

// An A/B pair's per-step figures: one per round, a number or null.
PairedSteps read_paired_steps(const JsonNode& node, size_t rounds) {
  PairedSteps p;
  p.baseline = node["baseline"].string();
  const JsonNode ratios = node["median_log_ratio"];
  if (!ratios.value().is_array() || ratios.size() != rounds) {
    ratios.fail("expected an array with one value per round");
  }
  for (size_t i = 0; i < ratios.size(); ++i) {
    const JsonNode ratio = ratios.at(i);
    if (!ratio.is_null() && !ratio.value().is_number()) {
      ratio.fail("expected a finite number or null");
    }
    p.median_log_ratio.push_back(ratio.number_or_null());
  }
  return p;
}

// --raw-samples: kept as written, once its series are known to hold what the merge of
// --processes reads (runner/commands/processes.cpp).
json read_raw_samples(const JsonNode& node) {
  const JsonNode wall = node["wall_s"];
  const JsonNode round = node["round"];
  if (wall.size() != round.size()) node.fail("wall_s and round must be arrays of one length");
  for (size_t i = 0; i < round.size(); ++i) {
    if (round.at(i).integer() < 0) round.at(i).fail("expected an integer >= 0");
  }
  for (const char* key : {"wall_s", "caller_blocked_s", "cpu_s", "gpu_s", "exposed_s"}) {
    const auto series = node.find(key);
    for (size_t i = 0; series && i < series->size(); ++i) (void)series->at(i).number();
  }
  return node.object();
}

// The figures of a case that ran. An ok case's reader needs its median, interval, rounds and
// speedup; the rest may be absent.
void read_measured(const JsonNode& node, bool ok, Entry& e) {
  const auto part = [&](const char* key) { return ok ? std::optional(node[key]) : node.find(key); };
  if (const auto wall = part("wall_s")) {
    e.wall = read_summary(*wall);
    if (ok) e.wall.median = (*wall)["median"].number();
    e.rounds.median = e.wall.median;
  }
  if (const auto interval = part("interval_s")) e.rounds.interval = read_interval(*interval);
  if (const auto rounds = part("rounds")) read_rounds(*rounds, e.rounds);
  if (const auto speedup = ok ? std::optional(node["speedup_vs_to"]) : node.find("speedup_vs_to")) {
    e.speedup = read_speedup(*speedup);
  }
  if (const auto noise = node.find("noise")) {
    read_number(*noise, "within", e.rounds.within);
    read_number(*noise, "between", e.rounds.between);
  }
  if (const auto stop = node.find("stop_reason")) e.stop_reason = stop->string();
  if (const auto warmup = node.find("warmup")) e.warmup = warmup->integer();
  read_number(node, "measure_time_s", e.measure_time_s);
  if (const auto s = optional_summary(node, "caller_blocked_s")) e.caller_blocked = *s;
  e.gpu = optional_summary(node, "gpu_s");
  if (const auto s = optional_summary(node, "cpu_s")) e.cpu = *s;
  e.exposed = optional_summary(node, "exposed_s");
  if (const auto throughput = node.find("throughput")) {
    read_number(*throughput, "gb_per_s", e.gb_per_s);
    read_number(*throughput, "tensors_per_s", e.tensors_per_s);
  }
  if (const auto steps = node.find("paired_steps")) {
    e.paired_steps = read_paired_steps(*steps, e.rounds.medians.size());
  }
  if (const auto engine = node.find("engine")) e.engine = engine->object();
  if (const auto raw = node.find("raw_samples")) e.raw_samples = read_raw_samples(*raw);
}

Entry read_entry(const JsonNode& node) {
  Entry e;
  e.device = node["device"].small_integer();
  // Names the writer takes from types.h: any other is a damaged report, not a case of its own
  // that matches nothing.
  const JsonNode direction = node["direction"];
  e.direction = direction.string();
  if (!parse_direction(e.direction)) direction.fail("expected h2d, d2h, d2d or h2h");
  e.strategy = node["strategy"].string();
  const JsonNode pattern = node["pattern"];
  e.pattern = pattern.string();
  if (!parse_pattern(e.pattern)) pattern.fail("expected hot, step or step-busy");
  const JsonNode status = node["status"];
  const auto parsed = parse_entry_status(status.string());
  if (!parsed) status.fail("expected ok, skipped, failed or verification_failed");
  e.status = *parsed;
  if (const auto source = node.find("source")) e.source = source->string();
  if (const auto target = node.find("target")) e.target = target->string();
  if (const auto reason = node.find("reason")) e.reason = reason->string();
  if (const auto verified = node.find("verified")) e.verified = verified->boolean();
  // A skipped case carries only the fields above.
  if (e.status != EntryStatus::kSkipped) read_measured(node, e.ok(), e);
  return e;
}

Aggregate read_aggregate(const JsonNode& node) {
  Aggregate a;
  a.direction = node["direction"].string();
  a.strategy = node["strategy"].string();
  const JsonNode devices = node["devices"];
  for (size_t i = 0; i < devices.size(); ++i) a.devices.push_back(devices.at(i).small_integer());
  a.gb_per_s = node["gb_per_s"].number_or_nan();
  a.tensors_per_s = node["tensors_per_s"].number_or_nan();
  a.slowest_median_s = node["slowest_median_s"].number_or_nan();
  a.pattern = node["pattern"].string();
  return a;
}

RunSection read_run(const JsonNode& node) {
  RunSection run;
  if (const auto point = node.find("sweep_point")) run.sweep_point = point->object();
  const JsonNode config = node["config"];
  run.config_name = config["name"].string();
  if (const auto file = config.find("file")) run.config_file = file->string();
  if (const auto seed = config.find("seed")) run.seed = seed->unsigned_integer();
  if (const auto given = config.find("given")) run.config_given = given->value();
  if (const auto resolved = config.find("resolved")) run.config_resolved = resolved->value();
  if (const auto settings = node.find("settings")) run.settings = settings->object();
  const JsonNode workload = node["workload"];
  run.workload_hash = workload["hash"].string();
  if (const auto tensors = workload.find("tensors")) run.tensors = tensors->integer();
  if (const auto bytes = workload.find("bytes")) run.bytes = bytes->integer();
  if (const auto summary = workload.find("summary")) run.workload = summary->value();
  const JsonNode results = node["results"];
  for (size_t i = 0; i < results.size(); ++i) run.entries.push_back(read_entry(results.at(i)));
  if (const auto aggregates = node.find("aggregates")) {
    for (size_t i = 0; i < aggregates->size(); ++i) {
      run.aggregates.push_back(read_aggregate(aggregates->at(i)));
    }
  }
  if (const auto notes = node.find("notes")) {
    for (size_t i = 0; i < notes->size(); ++i) run.notes.push_back(notes->at(i).string());
  }
  if (const auto canary = node.find("host_canary")) run.host_canary = canary->value();
  return run;
}

// {"job", "side", "round"}, or null.
json read_ab(const JsonNode& node) {
  if (node.is_null()) return nullptr;
  const std::string job = node["job"].string();
  const std::string side = node["side"].string();
  const int64_t round = node["round"].integer();
  if (job.empty()) node["job"].fail("must not be empty");
  if (round < 0) node["round"].fail("must be >= 0");
  return json{{"job", job}, {"side", side}, {"round", round}};
}

}  // namespace

Report read_report(const json& doc, const std::string& file) {
  const JsonNode root(doc, "", file);
  if (!doc.is_object()) root.fail("expected a JSON object (an mtc-bench report)");
  const JsonNode version = root["schema_version"];
  if (!version.value().is_number_integer() ||
      version.value().get<int64_t>() != kReportSchemaVersion) {
    version.fail(
        fmt::format("schema version {}, but this mtc-bench reads version {} only: measure "
                    "both sides with one version of mtc-bench",
                    version.value().dump(), kReportSchemaVersion));
  }
  Report report;
  report.ab = read_ab(root["ab"]);
  const JsonNode context = root["context"];
  (void)context["host"].string();
  (void)context["date"].string();
  report.context = context.value();
  if (const auto arguments = root.find("command_line")) {
    for (size_t i = 0; i < arguments->size(); ++i) {
      report.command_line.push_back(arguments->at(i).string());
    }
  }
  if (const auto profile = root.find("profile")) report.profile = profile->boolean();
  const JsonNode runs = root["runs"];
  for (size_t i = 0; i < runs.size(); ++i) report.runs.push_back(read_run(runs.at(i)));
  if (const auto code = root.find("exit_code")) report.exit_code = code->small_integer();
  if (const auto interrupted = root.find("interrupted")) {
    report.interrupted = interrupted->boolean();
  }
  return report;
}

json read_report_document(const std::string& path) {
  const std::string text = read_text_file(path, kMaxReportBytes, "report");
  // Copying and writing a parsed document recurse once per level (reading it does not): a report
  // nests a config (at most 256 levels, workload/config.cpp) inside a few levels of its own.
  constexpr int kMaxDepth = 512;
  // nlohmann names a container's start by the depth outside it (the outermost object's is 0) and
  // what is inside it by one more: only a start can open level kMaxDepth + 1.
  auto limit_depth = [&](int depth, json::parse_event_t event, json&) {
    const bool opens =
        event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
    if (opens && depth >= kMaxDepth)
      throw ConfigError(path, "", fmt::format("JSON nested deeper than {} levels", kMaxDepth));
    return true;
  };
  json doc;
  try {
    doc = json::parse(text, limit_depth);
  } catch (const json::exception& e) {
    // Not only parse errors: a number beyond a double's range (1e999) is an out_of_range thrown
    // while parsing (found by fuzzing; it ended the program). nlohmann quotes what it last read,
    // an unclosed string's whole rest of the file: the message is cut as a path is (shown.h).
    throw ConfigError(path, "", fmt::format("not valid JSON ({})", shown_path(e.what())));
  }
  return doc;
}

Report read_report(const std::string& path) {
  return read_report(read_report_document(path), path);
}

}  // namespace mtc::bench
