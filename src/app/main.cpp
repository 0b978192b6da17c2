// mtc-bench: everything lives in the runner library (mtc_bench_core) so tests can drive the
// same entry point with their own argv and streams.
#include "runner/commands/commands.h"

#include <iostream>

int main(int argc, char** argv) { return mtc::bench::run_cli(argc, argv, std::cout, std::cerr); }
