#include "detail/structure.h"

#include <c10/util/Exception.h>

namespace mtc::detail {
namespace {

class Flattener {
 public:
  explicit Flattener(FlatStructure& out) : out_(out) {}

  void visit(const c10::IValue& v, int depth) {
    TORCH_CHECK(depth <= kMaxNestingDepth, "mtc::start_copy: the input is nested deeper than ",
                kMaxNestingDepth, " levels (a container that contains itself?)");
    if (v.isTensor()) {
      out_.skeleton.push_back(SkeletonNode::tensor());
      out_.leaves.push_back(v.toTensor());
    } else if (v.isList()) {
      const auto list = v.toList();
      out_.skeleton.push_back(SkeletonNode::make(NodeKind::kList, list.size(), list.elementType()));
      for (const c10::IValue& item : v.toListRef()) visit(item, depth + 1);
    } else if (v.isTuple()) {
      const auto& elements = v.toTupleRef().elements();
      out_.skeleton.push_back(SkeletonNode::make(NodeKind::kTuple, elements.size()));
      for (const c10::IValue& item : elements) visit(item, depth + 1);
    } else if (v.isGenericDict()) {
      const auto dict = v.toGenericDict();
      out_.skeleton.push_back(
          SkeletonNode::make(NodeKind::kDict, dict.size(), dict.keyType(), dict.valueType()));
      for (const auto& entry : dict) {
        out_.skeleton.push_back(SkeletonNode::passthrough(entry.key()));
        visit(entry.value(), depth + 1);
      }
    } else {
      out_.skeleton.push_back(SkeletonNode::passthrough(v));
    }
  }

 private:
  FlatStructure& out_;
};

class Rebuilder {
 public:
  Rebuilder(const std::vector<SkeletonNode>& skeleton, const std::vector<at::Tensor>& leaves)
      : skeleton_(skeleton), leaves_(leaves) {}

  c10::IValue build() {
    const SkeletonNode& node = skeleton_.at(next_node_++);
    switch (node.kind) {
      case NodeKind::kTensor:
        return leaves_.at(next_leaf_++);
      case NodeKind::kPassthrough:
        return node.value;
      case NodeKind::kList: {
        c10::impl::GenericList list(node.type);
        list.reserve(node.size);
        for (uint32_t i = 0; i < node.size; ++i) list.push_back(build());
        return list;
      }
      case NodeKind::kTuple: {
        std::vector<c10::IValue> elements;
        elements.reserve(node.size);
        for (uint32_t i = 0; i < node.size; ++i) elements.push_back(build());
        return c10::ivalue::Tuple::create(std::move(elements));
      }
      case NodeKind::kDict: {
        c10::impl::GenericDict dict(node.type, node.value_type);
        dict.reserve(node.size);
        for (uint32_t i = 0; i < node.size; ++i) {
          c10::IValue key = skeleton_.at(next_node_++).value;
          dict.insert_or_assign(std::move(key), build());
        }
        return dict;
      }
    }
    TORCH_INTERNAL_ASSERT(false, "unknown skeleton node kind");
  }

  bool consumed_all() const {
    return next_node_ == skeleton_.size() && next_leaf_ == leaves_.size();
  }

 private:
  const std::vector<SkeletonNode>& skeleton_;
  const std::vector<at::Tensor>& leaves_;
  size_t next_node_ = 0;
  size_t next_leaf_ = 0;
};

}  // namespace

FlatStructure flatten(const c10::IValue& data) {
  FlatStructure out;
  Flattener(out).visit(data, 0);
  return out;
}

c10::IValue rebuild(const std::vector<SkeletonNode>& skeleton, const std::vector<at::Tensor>& leaves) {
  Rebuilder rebuilder(skeleton, leaves);
  c10::IValue result = rebuilder.build();
  TORCH_INTERNAL_ASSERT(rebuilder.consumed_all(), "skeleton and leaves do not match");
  return result;
}

}  // namespace mtc::detail
