// The .npy reader on arbitrary bytes: a tensor or a ConfigError, nothing else. A tensor it
// returns must be readable over its whole extent (the sanitizer checks every byte).
#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>

#include "errors.h"
#include "fuzz_input_file.h"
#include "workload/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mtc::bench::fuzzing::InputFile file(".npy");
  try {
    const at::Tensor tensor = mtc::bench::load_npy(file.write(data, size));
    // Touch the bytes through the tensor's own view (strides included, as a copy would).
    if (tensor.numel() > 0) (void)tensor.contiguous().sum();
  } catch (const mtc::bench::ConfigError&) {
  }
  return 0;
}
