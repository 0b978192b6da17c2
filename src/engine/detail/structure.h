// One walk over a nested IValue that builds the output structure as it goes: new containers of
// the same kinds, element types, order and keys, with every non-tensor leaf passed through and
// every tensor leaf handed to a policy. The policy either gives the leaf's output at once (the
// engine builds packed views during the walk) or defers it and is later told where in the new
// structure the output goes, so it can be filled once it exists (after a route has run).
#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>

#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "detail/dict_stash.h"
#include "detail/key_interner.h"
#include "detail/prefetch.h"
#include "mtc/stack_room.h"

namespace mtc::detail {

// Containers deeper than this are rejected: a deeper structure is almost surely a cycle.
inline constexpr int kMaxNestingDepth = 1000;

// Whether the walk reads an input container's element types in place (on unless a benchmark
// compares the two in one process). c10's keyType(), valueType() and elementType() return copies
// of a shared pointer: for a type that is not a singleton (TensorType, of Dict[str, Tensor] and
// List[Tensor]) each copy and its release count on one line, which every walking thread and the
// caller freeing a result count on too.
inline std::atomic<bool> types_in_place{true};
inline void set_types_in_place(bool on) { types_in_place.store(on, std::memory_order_relaxed); }

namespace structure_types {
inline const c10::TypePtr& element_type(const c10::IValue& list) {
  return static_cast<const c10::detail::ListImpl*>(list.internalToPointer())->elementType;
}
inline const c10::detail::DictImpl::DictElementTypes& entry_types(const c10::IValue& dict) {
  return static_cast<const c10::detail::DictImpl*>(dict.internalToPointer())->elementTypes;
}
}  // namespace structure_types

// What StructureCopier needs from its policy:
//   int64_t leaf(const at::Tensor& input, c10::IValue& output)
//     Called for every tensor leaf, in pre-order. Either sets `output` and returns -1, or
//     leaves it alone and returns a non-negative id of its choosing (a deferred leaf).
//   void place(int64_t id, c10::IValue* slot)
//     Called once per deferred leaf, when its container is complete: `slot` is where the
//     output goes in the new structure. It stays valid while the structure is not modified;
//     the policy assigns the output through it before anyone else sees the structure.
// Slots are given in post-order of their containers, not in leaf order.
template <class Policy>
class StructureCopier {
 public:
  explicit StructureCopier(Policy& policy) : policy_(policy) {}

  // Builds the new structure in `result` (which must outlive the slots given out: a deferred
  // tensor at the root is placed in `result` itself). Throws c10::Error for structures nested
  // deeper than kMaxNestingDepth (the policy may throw too); the partial structure is then
  // discarded.
  void copy(const c10::IValue& data, c10::IValue& result) {
    pending_root_ = -1;
    result = visit(data, 0);
    if (pending_root_ >= 0) policy_.place(pending_root_, &result);
  }

  // The same copy in parts, for a container root: each element of the root may be copied by a
  // different copier (each with its own policy, on its own thread), then the root assembled.
  //   copier_k.copy_element(element, position) for every element, by any copier, each copier
  //     in increasing positions;
  //   root = assemble(data, outputs of copy_element in order);
  //   copier_k.place_elements(root) for every copier.
  static bool is_container(const c10::IValue& v) {
    return v.isList() || v.isTuple() || v.isGenericDict();
  }
  // The elements of a container root, in order (a dict's values).
  static std::vector<const c10::IValue*> elements_of(const c10::IValue& root) {
    std::vector<const c10::IValue*> out;
    if (root.isList()) {
      for (const c10::IValue& item : root.toListRef()) out.push_back(&item);
    } else if (root.isTuple()) {
      for (const c10::IValue& item : root.toTupleRef().elements()) out.push_back(&item);
    } else {
      for (const auto& entry : root.toGenericDict()) out.push_back(&entry.value());
    }
    return out;
  }
  c10::IValue copy_element(const c10::IValue& element, uint32_t position) {
    TORCH_INTERNAL_ASSERT(root_deferred_.empty() || root_deferred_.back().position < position,
                          "copy_element: positions must increase");
    return child(element, 0, position, root_deferred_);
  }
  static c10::IValue assemble(const c10::IValue& root, std::vector<c10::IValue>& elements) {
    c10::SmallVector<Deferred, 8> none;
    auto take = [&](const c10::IValue&, uint32_t position, c10::SmallVector<Deferred, 8>&) {
      return std::move(elements[position]);
    };
    return build(root, take, none, /*read_children=*/false);
  }
  void place_elements(const c10::IValue& assembled) {
    place_all(assembled, root_deferred_);
    root_deferred_.clear();
  }

 private:
  // A deferred child of the container being built: where it is in the container, and who
  // deferred it.
  struct Deferred {
    Policy* policy;
    int64_t id;
    uint32_t position;
  };
  using DeferredList = c10::SmallVector<Deferred, 8>;

  c10::IValue visit(const c10::IValue& v, int depth) {
    if (v.isTensor()) {
      c10::IValue out;
      const int64_t id = policy_.leaf(v.toTensor(), out);
      // Only reachable for a tensor at the root: containers handle their tensor children.
      if (id >= 0) pending_root_ = id;
      return out;
    }
    if (!is_container(v)) return v;
    check_depth(depth);
    check_stack(depth);
    DeferredList deferred;
    auto copy_child = [&](const c10::IValue& item, uint32_t position, DeferredList& d) {
      return child(item, depth, position, d);
    };
    c10::IValue out = build(v, copy_child, deferred);
    place_all(out, deferred);
    return out;
  }

  // The output of child `v` at `position`, recording it in `deferred` when the policy defers it.
  c10::IValue child(const c10::IValue& v, int depth, uint32_t position, DeferredList& deferred) {
    check_depth(depth + 1);
    if (!v.isTensor()) return visit(v, depth + 1);
    c10::IValue out;
    const int64_t id = policy_.leaf(v.toTensor(), out);
    if (id >= 0) deferred.push_back({&policy_, id, position});
    return out;
  }

  // Every value (container or leaf) may be at most kMaxNestingDepth containers deep.
  static void check_depth(int depth) {
    TORCH_CHECK(depth <= kMaxNestingDepth, "mtc::start_copy: the input is nested deeper than ",
                kMaxNestingDepth, " levels (a container that contains itself?)");
  }

  // A thread of small stack (a caller's, where the walk runs on it) meets its end before level
  // 1,000 (mtc/stack_room.h).
  static void check_stack(int depth) {
    TORCH_CHECK(stack_room_for_a_level(), "mtc::start_copy: the input is nested ", depth,
                " levels deep, as deep as the stack of the thread that walks it allows");
  }

  static void check_size(size_t n) {
    TORCH_CHECK(n <= UINT32_MAX, "mtc::start_copy: a container of ", n, " elements is too large");
  }

  // A new container of v's kind (list, tuple or dict), element types and keys, whose k-th
  // element is element(v's k-th element, k, deferred). When `element` reads v's children
  // (`read_children`), their headers and storages are asked for ahead of it (prefetch.h).
  template <class Element>
  static c10::IValue build(const c10::IValue& v, Element&& element, DeferredList& deferred,
                           bool read_children = true) {
    uint32_t position = 0;
    const auto itself = [](const c10::IValue& item) -> const c10::IValue& { return item; };
    if (v.isList()) {
      const c10::ArrayRef<c10::IValue> items = v.toListRef();
      check_size(items.size());
      prefetch::Lookahead ahead(items.begin(), read_children ? items.end() : items.begin(), itself);
      // Each arm a list of its own: a conditional of the reference and a copy would copy both.
      c10::impl::GenericList out = types_in_place.load(std::memory_order_relaxed)
                                       ? c10::impl::GenericList(structure_types::element_type(v))
                                       : c10::impl::GenericList(v.toList().elementType());
      out.reserve(items.size());
      for (const c10::IValue& item : items) {
        ahead.advance();
        out.push_back(element(item, position++, deferred));
      }
      return out;
    }
    if (v.isTuple()) {
      const auto& items = v.toTupleRef().elements();
      check_size(items.size());
      prefetch::Lookahead ahead(items.begin(), read_children ? items.end() : items.begin(), itself);
      std::vector<c10::IValue> elements;
      elements.reserve(items.size());
      for (const c10::IValue& item : items) {
        ahead.advance();
        elements.push_back(element(item, position++, deferred));
      }
      return c10::ivalue::Tuple::create(std::move(elements));
    }
    const c10::impl::GenericDict in = v.toGenericDict();
    check_size(in.size());
    prefetch::Lookahead ahead(
        in.begin(), read_children ? in.end() : in.begin(),
        [](const auto& entry) -> const c10::IValue& { return entry.value(); });
    // Made ahead by this thread when it can be (dict_stash.h), with room for every entry.
    const auto& types = structure_types::entry_types(v);
    c10::impl::GenericDict out = types_in_place.load(std::memory_order_relaxed)
                                     ? dict_stash::take(types.keyType, types.valueType, in.size())
                                     : dict_stash::take(in.keyType(), in.valueType(), in.size());
    // String keys are the walking thread's own (key_interner.h), not the input's.
    for (const auto& entry : in) {
      ahead.advance();
      out.insert(key_interner::output_key(entry.key()),
                 element(entry.value(), position++, deferred));
    }
    return out;
  }

  // Gives each deferred element of the complete `container` its slot. `deferred` is in
  // position order.
  static void place_all(const c10::IValue& container, const DeferredList& deferred) {
    if (deferred.empty()) return;
    if (container.isList() || container.isTuple()) {
      // The container is complete: its elements no longer move.
      auto* first =
          const_cast<c10::IValue*>(container.isList() ? container.toListRef().data()
                                                      : container.toTupleRef().elements().begin());
      for (const Deferred& d : deferred) d.policy->place(d.id, first + d.position);
      return;
    }
    // Entries move inside a dict's table while keys are inserted: find the deferred ones now
    // that it is complete. Insertion order is the input's, so position k is the k-th entry.
    const c10::impl::GenericDict dict = container.toGenericDict();
    auto it = dict.begin();
    uint32_t at = 0;
    for (const Deferred& d : deferred) {
      for (; at < d.position; ++at) ++it;
      static_assert(std::is_same_v<decltype(it->value()), const c10::IValue&>,
                    "a dict entry's value must be readable in place");
      d.policy->place(d.id, const_cast<c10::IValue*>(&it->value()));
    }
  }

  Policy& policy_;
  int64_t pending_root_ = -1;
  DeferredList root_deferred_;  // deferred tensor elements of the root (copy in parts)
};

}  // namespace mtc::detail
