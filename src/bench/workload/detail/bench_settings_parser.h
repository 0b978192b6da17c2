// The "bench" object of a config <-> BenchSettings.
#pragma once

#include <string>

#include "workload/config.h"
#include "workload/detail/json_checks.h"

namespace mtc::bench::detail {

BenchSettings parse_bench_settings(const JsonChecks& checks, const Json& value,
                                   const std::string& path);
// Every field, defaults included: what the resolved config shows.
Json bench_settings_to_json(const BenchSettings& settings);

}  // namespace mtc::bench::detail
