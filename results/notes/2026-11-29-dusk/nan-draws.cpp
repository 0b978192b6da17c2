// How often the draw of GpuTest.GpuToCpuOutputsPackedInTheWalkKeepTheirBlockAlive puts a NaN
// in its kept tensor, so that equal() fails on a bitwise copy (2-core CPU machine, 2026-11-29:
// 137 of 20,000 seeds, 0.69 %). Built against the torch wheel's libtorch:
//   g++ -std=c++17 -O1 nan-draws.cpp -I$T/include -I$T/include/torch/csrc/api/include -L$T/lib
//   -ltorch -ltorch_cpu -lc10
// The test's data recipe on the CPU: list_of_lists(40, 30, random_tensor(kFloat, {k+1})),
// tensor 1111 kept; its bitwise copy compared with at::equal, as the test does after each later
// copy.
#include <ATen/ATen.h>

#include <cstring>
#include <iostream>
at::Tensor random_float(int64_t n) {  // gpu_test_support.cpp random_tensor, kFloat branch
  return at::randint(256, {n * 4}, at::kByte).view(at::kFloat).reshape({n});
}
int main() {
  const int kSeeds = 20000;
  int equal_false = 0, bitwise_diff = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    at::manual_seed(seed);
    at::Tensor kept_src;
    for (int i = 0; i < 40; ++i)
      for (int k = 0; k < 30; ++k) {
        at::Tensor t = random_float(k + 1);
        if (i * 30 + k == 1111) kept_src = t;
      }
    at::Tensor kept = at::empty_like(kept_src);  // a bitwise copy, as the engine's output is
    std::memcpy(kept.data_ptr(), kept_src.const_data_ptr(), kept_src.nbytes());
    if (std::memcmp(kept.const_data_ptr(), kept_src.const_data_ptr(), kept.nbytes()) != 0)
      ++bitwise_diff;
    if (!kept.equal(kept_src)) {
      if (++equal_false <= 3)
        std::cout << "seed " << seed << ": kept " << kept << " bitwise equal, equal() false\n";
    }
  }
  std::cout << "seeds " << kSeeds << ", equal() false " << equal_false << " ("
            << 100.0 * equal_false / kSeeds << " %), bitwise differences " << bitwise_diff << "\n";
}
