// The cases of BM_EngineCopy (engine_bench.cpp): its arguments, {batch multiplier, option bits},
// the bits' meanings (engine_bench_args.cpp) and the lists of cases registered for each direction.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>

namespace mtc::microbench {

// The option bit that turns the dict shelf off (dict_shelf.h), past 32 bits.
inline constexpr int64_t kNoShelf = int64_t{1} << 31;
// The option bit that keeps each result alive for kKeptResults more copies.
inline constexpr int64_t kKeepResults = int64_t{1} << 32;
inline constexpr size_t kKeptResults = 16;

// CPU->GPU cases without a gap before each copy, each run until its copies took 0.3 s.
void engine_args(benchmark::internal::Benchmark* b);
// CPU->GPU and GPU->CPU cases with a gap before each copy, a fixed number of copies each.
void h2d_gap_args(benchmark::internal::Benchmark* b);
void d2h_gap_args(benchmark::internal::Benchmark* b);
// GPU->CPU cases without a gap.
void d2h_args(benchmark::internal::Benchmark* b);

}  // namespace mtc::microbench
