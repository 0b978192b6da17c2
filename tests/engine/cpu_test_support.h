// What the copier's tests without a GPU share: a mixed batch of every container kind, the check
// that a CPU->CPU copy returns the input's own tensors, and the checks of a copy that must fail.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <functional>
#include <string>
#include <vector>

#include "mtc/copier.h"
#include "test_constants.h"

namespace mtc::test {

// fn() throws a c10::Error mentioning `fragment`.
void expect_throws_with(const std::function<void()>& fn, const std::string& fragment);
// The copy of `data` fails with a c10::Error mentioning `fragment`: thrown by start_copy, or
// (the structure is walked on the worker) rethrown by get() and by ready().
void expect_copy_fails(const c10::IValue& data, const c10::Device& device,
                       const CopyOptions& options, const std::string& fragment);
// A batch of every container kind and passthrough leaf, with tensors of several dtypes,
// layouts and sizes. `tensors` receives its tensor leaves in order.
c10::IValue mixed_batch(std::vector<at::Tensor>& tensors);
// `out` has the shape of `in` with new containers, and every tensor is the input's own: a copy
// to the CPU returns CPU tensors as they are.
void expect_same_structure_same_tensors(const c10::IValue& out, const c10::IValue& in);

}  // namespace mtc::test
