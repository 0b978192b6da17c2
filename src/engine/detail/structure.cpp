#include "detail/structure.h"

#include <c10/util/Exception.h>


namespace mtc::detail {
namespace {

class Flattener {
 public:
  explicit Flattener(FlatStructure& out) : out_(out), skeleton_(out.skeleton) {}

  void visit(const c10::IValue& v, int depth) {
    TORCH_CHECK(depth <= kMaxNestingDepth, "mtc::start_copy: the input is nested deeper than ",
                kMaxNestingDepth, " levels (a container that contains itself?)");
    if (v.isTensor()) {
      skeleton_.nodes.push_back({NodeKind::kTensor, 0, 0});
      out_.leaves.push_back(v.toTensor());
    } else if (v.isList()) {
      const c10::ArrayRef<c10::IValue> items = v.toListRef();
      skeleton_.nodes.push_back({NodeKind::kList, count(items.size()), type(v.toList().elementType())});
      for (const c10::IValue& item : items) {
        mark_child(depth);
        visit(item, depth + 1);
      }
    } else if (v.isTuple()) {
      const auto& elements = v.toTupleRef().elements();
      skeleton_.nodes.push_back({NodeKind::kTuple, count(elements.size()), 0});
      for (const c10::IValue& item : elements) {
        mark_child(depth);
        visit(item, depth + 1);
      }
    } else if (v.isGenericDict()) {
      const auto dict = v.toGenericDict();
      const uint32_t types = type(dict.keyType());
      type(dict.valueType());
      skeleton_.nodes.push_back({NodeKind::kDict, count(dict.size()), types});
      for (const auto& entry : dict) {
        mark_child(depth);
        passthrough(entry.key());
        visit(entry.value(), depth + 1);
      }
    } else {
      passthrough(v);
    }
  }

 private:
  void mark_child(int depth) {
    if (depth == 0) {
      skeleton_.root_children.push_back({static_cast<uint32_t>(skeleton_.nodes.size()),
                                         static_cast<uint32_t>(out_.leaves.size())});
    }
  }
  static uint32_t count(size_t n) {
    TORCH_CHECK(n <= UINT32_MAX, "mtc::start_copy: a container of ", n, " elements is too large");
    return static_cast<uint32_t>(n);
  }
  uint32_t type(c10::TypePtr t) {
    skeleton_.types.push_back(std::move(t));
    return static_cast<uint32_t>(skeleton_.types.size() - 1);
  }
  void passthrough(const c10::IValue& v) {
    skeleton_.nodes.push_back({NodeKind::kPassthrough, 0, static_cast<uint32_t>(skeleton_.values.size())});
    skeleton_.values.push_back(v);
  }

  FlatStructure& out_;
  Skeleton& skeleton_;
};

class Rebuilder {
 public:
  Rebuilder(const Skeleton& skeleton, const std::vector<at::Tensor>& leaves, size_t node = 0,
            size_t leaf = 0)
      : skeleton_(skeleton), leaves_(leaves), next_node_(node), next_leaf_(leaf) {}

  c10::IValue build() {
    const SkeletonNode node = skeleton_.nodes[next_node_++];
    switch (node.kind) {
      case NodeKind::kTensor:
        return leaves_[next_leaf_++];
      case NodeKind::kPassthrough:
        return skeleton_.values[node.aux];
      case NodeKind::kList: {
        c10::impl::GenericList list(skeleton_.types[node.aux]);
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
        c10::impl::GenericDict dict(skeleton_.types[node.aux], skeleton_.types[node.aux + 1]);
        dict.reserve(node.size);
        for (uint32_t i = 0; i < node.size; ++i) {
          const SkeletonNode key = skeleton_.nodes[next_node_++];
          dict.insert_or_assign(skeleton_.values[key.aux], build());
        }
        return dict;
      }
    }
    TORCH_INTERNAL_ASSERT(false, "unknown skeleton node kind");
  }

  bool consumed_all() const {
    return next_node_ == skeleton_.nodes.size() && next_leaf_ == leaves_.size();
  }

 private:
  const Skeleton& skeleton_;
  const std::vector<at::Tensor>& leaves_;
  size_t next_node_;
  size_t next_leaf_;
};

}  // namespace

FlatStructure flatten(const c10::IValue& data) {
  FlatStructure out;
  out.leaves.reserve(256);
  out.skeleton.nodes.reserve(512);
  out.skeleton.values.reserve(256);
  Flattener(out).visit(data, 0);
  return out;
}

c10::IValue rebuild(const Skeleton& skeleton, const std::vector<at::Tensor>& leaves) {
  TORCH_INTERNAL_ASSERT(!skeleton.nodes.empty(), "rebuild of an empty skeleton");
  Rebuilder rebuilder(skeleton, leaves);
  c10::IValue result = rebuilder.build();
  TORCH_INTERNAL_ASSERT(rebuilder.consumed_all(), "skeleton and leaves do not match");
  return result;
}

c10::IValue rebuild_child(const Skeleton& skeleton, const std::vector<at::Tensor>& leaves,
                          size_t child) {
  const ChildStart start = skeleton.root_children.at(child);
  const bool dict = skeleton.nodes.front().kind == NodeKind::kDict;
  return Rebuilder(skeleton, leaves, start.node + (dict ? 1 : 0), start.leaf).build();
}

c10::IValue assemble_root(const Skeleton& skeleton, std::vector<c10::IValue> children) {
  const SkeletonNode root = skeleton.nodes.front();
  TORCH_INTERNAL_ASSERT(children.size() == root.size, "assemble_root: wrong number of children");
  switch (root.kind) {
    case NodeKind::kList: {
      c10::impl::GenericList list(skeleton.types[root.aux]);
      list.reserve(root.size);
      for (c10::IValue& child : children) list.push_back(std::move(child));
      return list;
    }
    case NodeKind::kTuple:
      return c10::ivalue::Tuple::create(std::move(children));
    case NodeKind::kDict: {
      c10::impl::GenericDict dict(skeleton.types[root.aux], skeleton.types[root.aux + 1]);
      dict.reserve(root.size);
      for (size_t i = 0; i < children.size(); ++i) {
        const SkeletonNode key = skeleton.nodes[skeleton.root_children[i].node];
        dict.insert_or_assign(skeleton.values[key.aux], std::move(children[i]));
      }
      return dict;
    }
    default:
      TORCH_INTERNAL_ASSERT(false, "assemble_root: the root is not a container");
  }
}

}  // namespace mtc::detail
