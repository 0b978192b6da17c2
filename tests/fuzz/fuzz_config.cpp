// The config parser, then the builder, on arbitrary text: a workload or a ConfigError, nothing
// else. Relative file names resolve against the test fixtures, so the .npy and torch.save
// inputs a config names are reached too. The build limits are small: a build that would need
// more throws ConfigError, and the fuzzer spends its time on the parser's paths, not on filling
// values.
#include <ATen/core/ivalue.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "errors.h"
#include "workload/config.h"
#include "workload/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string file = std::string(MTC_WORKLOAD_FIXTURES) + "/fuzz.json";
  mtc::bench::BuildOptions options;
  options.max_bytes = 1 << 20;
  options.max_nodes = 20'000;
  try {
    const mtc::bench::Config config =
        mtc::bench::parse_config(std::string(reinterpret_cast<const char*>(data), size), file);
    (void)mtc::bench::build_workload(config, options);
  } catch (const mtc::bench::ConfigError&) {
  }
  return 0;
}
