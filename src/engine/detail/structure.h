// Flattening a nested IValue into its tensor leaves plus a skeleton, and rebuilding the same
// structure around new leaves. The skeleton is independent of the input's containers, so the
// rebuild never re-reads (possibly since mutated) input containers.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <vector>

namespace mtc::detail {

enum class NodeKind : uint8_t {
  kTensor,       // the next tensor leaf, in order
  kPassthrough,  // any non-container leaf (or a dict key), returned as it is
  kList,         // `size` children follow
  kTuple,        // `size` children follow
  kDict,         // `size` (key node, value subtree) pairs follow
};

struct SkeletonNode {
  NodeKind kind;
  uint32_t size = 0;
  c10::IValue value;        // kPassthrough only
  c10::TypePtr type;        // kList: element type; kDict: key type
  c10::TypePtr value_type;  // kDict: value type

  static SkeletonNode tensor() { return make(NodeKind::kTensor, 0); }
  static SkeletonNode passthrough(c10::IValue v) {
    SkeletonNode n = make(NodeKind::kPassthrough, 0);
    n.value = std::move(v);
    return n;
  }
  static SkeletonNode make(NodeKind kind, size_t size, c10::TypePtr type = nullptr,
                           c10::TypePtr value_type = nullptr) {
    SkeletonNode n{kind, static_cast<uint32_t>(size), c10::IValue(), std::move(type),
                   std::move(value_type)};
    return n;
  }
};

// Containers deeper than this are rejected: a deeper structure is almost surely a cycle.
inline constexpr int kMaxNestingDepth = 1000;

struct FlatStructure {
  std::vector<at::Tensor> leaves;
  std::vector<SkeletonNode> skeleton;  // pre-order
};

// Walks `data` once. Throws c10::Error for structures nested deeper than kMaxNestingDepth.
FlatStructure flatten(const c10::IValue& data);

// Rebuilds the skeleton with `leaves` (one per kTensor node, in order): new containers of the
// same kinds, element types, order and keys.
c10::IValue rebuild(const std::vector<SkeletonNode>& skeleton, const std::vector<at::Tensor>& leaves);

}  // namespace mtc::detail
