// Element types for the output containers that no other thread's containers count on.
//
// A typed container holds counted references to its element types: every Dict[str, Tensor] and
// List[Tensor] counts on the one TensorType torch keeps for the whole process
// (TensorType::get()), and every container of List[...] values on one ListType. Making such a
// container adds to that count and freeing it subtracts, an atomic operation on one cache line
// that every thread of the process shares. Threads that build or free containers at the same
// moment (a split walk's parts, the copies of several GPUs, a caller freeing the previous result
// while workers build the next) pass the line between their cores at every container: two
// threads walking Dict[str, Tensor] batches in one process each took 1.17x their time alone on
// the CPU machine, 1.00x with Dict[str, Any], which counts on nothing (results/notes/2026-11-28.md).
//
// A twin is a new type object equal to the original (torch compares types by value, and typed
// access to a container checks its types by value), made once per walk part and shared by the
// containers that part builds: their counts stay on a line of their own. Kinds whose identity
// matters (classes, named tuples, ...) are never twinned; the original is used.
#pragma once

#include <ATen/core/jit_type.h>
#include <c10/util/SmallVector.h>

namespace mtc::detail {

class TypeTwins {
 public:
  // `type`'s twin, made on first use; `type` itself where it counts on nothing (AnyType,
  // StringType, ... are singletons) or is of a kind not twinned.
  c10::TypePtr twin(const c10::TypePtr& type);

  // Off, twin() gives every type itself, as torch's own containers share them; on by default.
  // For measurements that compare the two in one process: safe at any time, containers made
  // either way are alike.
  static void set_enabled(bool on);
  static bool enabled();

 private:
  // Tensors, lists, dicts and optionals: types whose value is all there is to them (their
  // contained types are twinned in turn, or kept).
  static bool twinnable(const c10::Type& type);
  c10::TypePtr make(const c10::TypePtr& type);

  struct Pair {
    const c10::Type* original;  // kept alive by `original_ref`
    c10::TypePtr original_ref;
    c10::TypePtr twin;
  };
  c10::SmallVector<Pair, 4> pairs_;
};

}  // namespace mtc::detail
