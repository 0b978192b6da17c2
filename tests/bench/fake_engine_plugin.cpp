// A library that claims to be an engine but speaks another plugin interface: the loader must
// refuse it with a clear error (loaded_engine_test.cpp).
#include "mtc_engine_plugin.h"

namespace {
const mtc_engine_plugin_table kWrongVersion{MTC_ENGINE_PLUGIN_ABI + 98,
                                            sizeof(mtc_engine_plugin_table),
                                            "fake",
                                            "0.0.0",
                                            0,
                                            nullptr,
                                            nullptr,
                                            nullptr,
                                            nullptr,
                                            nullptr,
                                            nullptr,
                                            nullptr};
}  // namespace

extern "C" __attribute__((visibility("default"))) const mtc_engine_plugin_table*
mtc_engine_plugin_table_v1() {
  return &kWrongVersion;
}
