// mtc-bench: everything lives in the runner library (mtc_bench_core) so tests can drive the
// same entry point with their own argv and streams.
#include <iostream>

#include "runner/commands/commands.h"
#include "runner/commands/processes.h"

int main(int argc, char** argv) {
  // --processes starts this same program again.
  mtc::bench::set_executable_for_children("/proc/self/exe");
  return mtc::bench::run_cli(argc, argv, std::cout, std::cerr);
}
