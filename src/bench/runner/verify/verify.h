// Checks that a strategy's output is its input, on the target: same structure (container
// kinds, lengths, keys in order, list element types), every non-tensor leaf equal, and every
// tensor leaf with the same dtype and shape, on the target device, bit for bit equal.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <optional>
#include <string>

namespace mtc::bench {

struct Mismatch {
  std::string path;     // "/0/cams_gt/3/bounding_boxes"; "/" for the root
  std::string message;  // "dtype float32, expected int64"

  std::string describe() const { return path + ": " + message; }
};

// The first difference found, or empty when `output` is a faithful copy of `input` on `target`.
// Copies the tensors to the CPU to compare them: never on a timed path.
std::optional<Mismatch> verify_copy(const c10::IValue& input, const c10::IValue& output,
                                    const c10::Device& target);

}  // namespace mtc::bench
