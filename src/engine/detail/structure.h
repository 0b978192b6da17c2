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

// 12 bytes: the walk touches one small node per element. Values and types live in side
// tables so that flattening a batch allocates little and copies no IValue it need not.
struct SkeletonNode {
  NodeKind kind;
  uint32_t size;  // children of a container
  uint32_t aux;   // kPassthrough: index into values; kList: into types; kDict: key type at
                  // types[aux], value type at types[aux + 1]
};

// Where one child of the root container starts (for a dict: its key node), so the children
// can be rebuilt independently, on several threads.
struct ChildStart {
  uint32_t node;
  uint32_t leaf;
};

struct Skeleton {
  std::vector<SkeletonNode> nodes;  // pre-order
  std::vector<c10::IValue> values;
  std::vector<c10::TypePtr> types;
  std::vector<ChildStart> root_children;  // empty when the root is not a container

  void clear() {
    nodes.clear();
    values.clear();
    types.clear();
    root_children.clear();
  }
};

// Containers deeper than this are rejected: a deeper structure is almost surely a cycle.
inline constexpr int kMaxNestingDepth = 1000;

struct FlatStructure {
  std::vector<at::Tensor> leaves;
  Skeleton skeleton;
};

// Walks `data` once. Throws c10::Error for structures nested deeper than kMaxNestingDepth.
FlatStructure flatten(const c10::IValue& data);


// Rebuilds the skeleton with `leaves` (one per kTensor node, in order): new containers of the
// same kinds, element types, order and keys.
c10::IValue rebuild(const Skeleton& skeleton, const std::vector<at::Tensor>& leaves);

// The same, in pieces: rebuild_child(i) builds the root's i-th child (a dict's value), and
// assemble_root puts the built children into a new root container. Children may be built
// concurrently.
c10::IValue rebuild_child(const Skeleton& skeleton, const std::vector<at::Tensor>& leaves, size_t child);
c10::IValue assemble_root(const Skeleton& skeleton, std::vector<c10::IValue> children);

}  // namespace mtc::detail
