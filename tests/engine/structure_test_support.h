// What the structure walk's tests share: a policy that records every call the walk makes, the
// walk run with it and checked, and a structure of every container kind.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace mtc::detail::structure_test {

at::Tensor tensor_of(double value);

// Records every call the walk makes and gives every leaf a new tensor (an undefined leaf stays
// undefined), so each output leaf can be told apart from its input. The leaves `defer` picks
// are deferred; fill() then assigns their outputs through the slots place() was given.
class RecordingPolicy {
 public:
  explicit RecordingPolicy(std::function<bool(size_t leaf)> defer = nullptr)
      : defer_(std::move(defer)) {}

  int64_t leaf(const at::Tensor& input, c10::IValue& output) {
    const size_t index = inputs.size();
    inputs.push_back(input);
    outputs.push_back(input.defined() ? tensor_of(1000.0 + static_cast<double>(index))
                                      : at::Tensor());
    if (defer_ && defer_(index)) {
      deferred.push_back(id_of(index));
      return deferred.back();
    }
    output = outputs.back();
    return -1;
  }

  void place(int64_t id, c10::IValue* slot) { placed.emplace_back(id, slot); }

  void fill() const {
    for (const auto& [id, slot] : placed) *slot = outputs.at(leaf_of(id));
  }

  // The ids are the policy's own, not leaf indices: the walk must hand them back unchanged.
  static int64_t id_of(size_t leaf) { return 7 + 3 * static_cast<int64_t>(leaf); }
  static size_t leaf_of(int64_t id) { return static_cast<size_t>((id - 7) / 3); }

  std::vector<at::Tensor> inputs;                        // every leaf() call, in call order
  std::vector<at::Tensor> outputs;                       // by leaf
  std::vector<int64_t> deferred;                         // ids given out, in leaf order
  std::vector<std::pair<int64_t, c10::IValue*>> placed;  // every place() call, in call order

 private:
  std::function<bool(size_t)> defer_;
};

// Deferral choices: every other leaf (1, 3, ...), or all of them.
bool every_other(size_t leaf);
bool all_leaves(size_t);

// Walks `in` with `policy` and fills the deferred outputs, checking the calls on the way:
// leaf() once per tensor leaf, in pre-order; place() once per deferred id and for no other,
// each slot still empty (the walk leaves a deferred output to the policy).
c10::IValue copy_with(const c10::IValue& in, RecordingPolicy& policy);

// The output of `in` has its structure, with new containers, and every leaf holds the tensor
// the policy made for it, whether given at once or placed afterwards.
c10::IValue expect_copied(const c10::IValue& in, RecordingPolicy& policy);
c10::IValue expect_copied(const c10::IValue& in);

// A list of every container kind, nested, with passthrough leaves and 7 tensor leaves.
c10::IValue every_kind();

}  // namespace mtc::detail::structure_test
