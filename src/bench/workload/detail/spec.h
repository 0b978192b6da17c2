// The compiled form of a workload spec: what spec_parser produces from the JSON after every
// check, and what the builder walks. Each node keeps its JSON pointer so that a problem found
// while building (a drawn size too large) still names the place in the config.
#pragma once

#include <ATen/core/ivalue.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "workload/detail/tensor_spec.h"

namespace mtc::bench::detail {

struct Node;
using NodePtr = std::shared_ptr<const Node>;

struct SequenceNode {
  bool tuple = false;
  std::vector<NodePtr> items;  // explicit items; otherwise `item` repeated
  NodePtr item;
  std::optional<CountDist> repeat;
  std::vector<std::pair<std::string, std::vector<CountDist>>> each;  // "for": symbol -> values
};
struct DictNode {
  std::vector<std::pair<std::string, NodePtr>> entries;
};
struct TensorNode {
  TensorSpec spec;
};
// A .npy leaf or a torch.save'd subtree, read when the config is loaded.
struct LoadedNode {
  std::string file;
  c10::IValue value;
  std::optional<Memory> memory;  // absent: tensors stay as loaded
};
struct CycleNode {
  std::vector<NodePtr> options;
};
struct ChooseNode {
  std::vector<NodePtr> options;
  std::vector<double> cumulative;  // running sum of the weights
};
struct LetNode {
  std::vector<std::pair<std::string, CountDist>> bindings;
  NodePtr body;
};
struct ValueNode {
  nlohmann::ordered_json value;  // converted afresh on every build so no container is shared
};

struct Node {
  std::string path;
  std::variant<SequenceNode, DictNode, TensorNode, LoadedNode, CycleNode, ChooseNode, LetNode,
               ValueNode>
      kind;
  // Symbols used below this node and not bound there: name -> JSON pointer of one use.
  std::map<std::string, std::string> free_symbols;
  // Nodes on the longest path down from here (1 for a leaf), definitions expanded.
  int height = 1;
};

struct WorkloadSpec {
  NodePtr root;
  // Every .npy and .pt file the spec read (unused definitions' included), as LoadedNode names
  // them: outputs must not be written over them.
  std::vector<std::string> data_files;
};

}  // namespace mtc::bench::detail
