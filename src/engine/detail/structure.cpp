#include "detail/structure.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <utility>

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

  // One child of a root container flattened on its own (see flatten with several parts).
  void visit_root_child(const c10::IValue* key, const c10::IValue& value) {
    mark_child(0);
    if (key != nullptr) passthrough(*key);
    visit(value, 1);
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

namespace {

constexpr size_t kMinParallelChildren = 8;

// Appends `piece` (the flattening of some root children) to `out`, rebasing its indices.
void append_piece(FlatStructure& out, FlatStructure&& piece) {
  Skeleton& sk = out.skeleton;
  const auto node_base = static_cast<uint32_t>(sk.nodes.size());
  const auto leaf_base = static_cast<uint32_t>(out.leaves.size());
  const auto value_base = static_cast<uint32_t>(sk.values.size());
  const auto type_base = static_cast<uint32_t>(sk.types.size());
  for (SkeletonNode node : piece.skeleton.nodes) {
    if (node.kind == NodeKind::kPassthrough) node.aux += value_base;
    if (node.kind == NodeKind::kList || node.kind == NodeKind::kDict) node.aux += type_base;
    sk.nodes.push_back(node);
  }
  for (const ChildStart c : piece.skeleton.root_children)
    sk.root_children.push_back({c.node + node_base, c.leaf + leaf_base});
  for (at::Tensor& t : piece.leaves) out.leaves.push_back(std::move(t));
  for (c10::IValue& v : piece.skeleton.values) sk.values.push_back(std::move(v));
  for (c10::TypePtr& t : piece.skeleton.types) sk.types.push_back(std::move(t));
}

}  // namespace

FlatStructure flatten(const c10::IValue& data, int64_t max_parts, const ParallelFor& parallel_for) {
  // The root's children, as (key or null, value).
  std::vector<std::pair<const c10::IValue*, const c10::IValue*>> children;
  FlatStructure out;
  SkeletonNode root{};
  if (data.isList()) {
    for (const c10::IValue& item : data.toListRef()) children.emplace_back(nullptr, &item);
    out.skeleton.types.push_back(data.toList().elementType());
    root = {NodeKind::kList, 0, 0};
  } else if (data.isTuple()) {
    for (const c10::IValue& item : data.toTupleRef().elements()) children.emplace_back(nullptr, &item);
    root = {NodeKind::kTuple, 0, 0};
  } else if (data.isGenericDict()) {
    const auto dict = data.toGenericDict();
    for (const auto& entry : dict) children.emplace_back(&entry.key(), &entry.value());
    out.skeleton.types.push_back(dict.keyType());
    out.skeleton.types.push_back(dict.valueType());
    root = {NodeKind::kDict, 0, 0};
  }
  const int64_t parts = std::min<int64_t>(max_parts, static_cast<int64_t>(children.size()));
  // A root with few children is usually small: not worth waking helpers for.
  if (parts < 2 || children.size() < kMinParallelChildren || !parallel_for) return flatten(data);

  TORCH_CHECK(children.size() <= UINT32_MAX, "mtc::start_copy: a container of ", children.size(),
              " elements is too large");
  root.size = static_cast<uint32_t>(children.size());
  out.skeleton.nodes.push_back(root);
  std::vector<FlatStructure> pieces(parts);
  const size_t per_part = (children.size() + parts - 1) / parts;
  parallel_for(parts, [&](int64_t p) {
    Flattener flattener(pieces[p]);
    const size_t last = std::min(children.size(), (p + 1) * per_part);
    for (size_t c = p * per_part; c < last; ++c)
      flattener.visit_root_child(children[c].first, *children[c].second);
  });
  for (FlatStructure& piece : pieces) append_piece(out, std::move(piece));
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
