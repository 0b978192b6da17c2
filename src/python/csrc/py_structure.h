// A Python structure taken apart for the engine, and put back together around its outputs.
//
// The walk descends into the containers torch.utils._pytree knows (containers.h): list, tuple,
// dict, named tuples, OrderedDict, defaultdict and deque; every other object is an opaque leaf.
// Tensor leaves are torch.Tensor objects (subclasses included); numpy arrays become tensors
// through torch.from_numpy, without a copy where the memory allows it.
//
// The engine is not given the containers. It gets one entry per root element: the element's
// tensors as a tensor list, the tensor itself, or None. That keeps the engine's split walk at
// the granularity of the structure, keeps its error messages ("tensor leaf K of root element
// E", leaves numbered in pre-order) true of the Python structure, and spares building an
// IValue container and a string key for every Python one. A tape of the containers, keys and
// opaque leaves in pre-order rebuilds the result, so the input is not read again after the
// walk.
//
// The walk only notes each tensor leaf (holding its object) and asks for its header; the leaves
// are taken in after the walk (take_tensor_leaves). After a training step's gap the batch is in
// main memory, and reading each header as the walk meets it would wait for them one by one.
//
// Tensors the engine only reads (see LendingRule) are lent to it without a C++ reference: the
// walk holds their Python objects instead. A C++ reference to a tensor whose Python object
// lives costs, besides the atomic count, torch's PyObject preservation: the Python object is
// held when the count goes from 1 to 2 and let go, taking the GIL, when it falls back, once per
// tensor in the walk and again when the handle is dropped.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <mtc/copier.h>
#include <torch/csrc/python_headers.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "containers.h"
#include "deferred_release.h"

namespace mtc::python {

// Deeper nesting is rejected: it is almost surely a container that holds itself.
inline constexpr int kMaxNestingDepth = 1000;

// Which tensor leaves are lent to the engine without a C++ reference (a +0 at::Tensor): those it
// packs into a staging chunk, whose bytes it reads and whose tensor it never copies. The test
// repeats the engine's (LeafRouter::leaf) and must stay in step with it: a lent tensor the
// engine copied after all would keep its counts balanced, but the copy (its count going from 1
// to 2) would take the GIL on a worker, which then waits for a caller that holds it.
struct LendingRule {
  bool enabled = false;   // a CUDA target with pack_cpu_tensors
  int64_t max_bytes = 0;  // the largest tensor packed: min(kMaxPackedTensorBytes, the chunk limit)
  // A CPU target, where a CPU tensor comes back as it is: one made from a read-only numpy array
  // must be a copy, or the result would be a writable tensor over memory that must not change.
  bool to_cpu = false;
  // The rule of a copy to `target` with `options`.
  static LendingRule for_copy(const c10::Device& target, const CopyOptions& options);
  bool lends(const at::Tensor& tensor) const;
};

class PyStructure {
 public:
  // Walks `data`; the GIL must be held. Throws pybind11::value_error naming the place
  // (data[0]['boxes']) for a leaf that cannot become a tensor or for too deep a nesting.
  PyStructure(PyObject* data, const LendingRule& lending);
  // A structure to be walked by walk_into(), element by element into the engine's copy.
  explicit PyStructure(const LendingRule& lending) : lending_(lending) {}
  // Owns references to Python objects: copying would have to count them again.
  PyStructure(const PyStructure&) = delete;
  PyStructure& operator=(const PyStructure&) = delete;
  // The GIL must be held; the engine must be done with the input (its handle destroyed).
  ~PyStructure();

  // The streamed walk, for a list, tuple or dict `root` (exact types, `feed`->size() elements,
  // which no code run by the walk can change: a copy the caller made): each root element's
  // entry goes into `feed` as soon as it is walked, so the engine's workers copy it while the
  // others are walked. `reuse` (may be null) is offer_outputs_by_position()'s. On an error
  // (pybind11::value_error as in the constructor, or Python's), the feed is abandoned, and the
  // caller destroys the copy's handle before this structure. The GIL must be held.
  void walk_into(PyObject* root, RootFeed& feed, ReusableOutputs* reuse);
  // offer_outputs() before a streamed walk, which offers by position whatever the leaves will
  // be: `objects` (owned, by leaf, or null) for the leaves of `root_elements` root elements.
  // The walk drops each offer whose leaf the engine will not pack, and tells the engine where
  // each element's leaves start. Null when `objects` is empty.
  std::shared_ptr<ReusableOutputs> offer_outputs_by_position(std::vector<PyObject*> objects,
                                                             size_t root_elements);

  // By tensor leaf: lent to the engine. Those are the leaves it packs, the only ones whose
  // outputs it can make in a reused TensorImpl.
  const std::vector<bool>& lent_leaves() const { return lent_; }
  // Offers `objects` (by tensor leaf, owned references to tensor objects of dropped results, or
  // null; only for lent leaves) to the engine as those leaves' outputs: what to give start_copy,
  // null when `objects` is empty. The structure owns them from here, whatever fails: the result
  // takes those the engine reused, clear() drops the others. Before take_engine_input().
  std::shared_ptr<ReusableOutputs> offer_outputs(std::vector<PyObject*> objects);
  // What the engine copies. Moves the tensors out: call once. Lent tensors stay lent until
  // release_lent().
  c10::IValue take_engine_input();
  // The same containers, keys and opaque leaves around `output`, what the engine returned for
  // take_engine_input(); its tensors are moved into the result, and the tensor objects made for
  // them are added to `created`, as are the offered objects the engine reused (`reused`, by
  // leaf, from ReusableOutputs; empty when none was offered), whose undefined outputs they
  // stand for. A new reference; the GIL must be held (`output` is released here, with it).
  PyObject* rebuild(c10::IValue output, NewTensors& created, const std::vector<uint8_t>& reused);
  // Whether the result can be built before the engine's outputs exist, as it will be if the
  // engine reuses every offered object: an object was offered for every tensor leaf, and the
  // structure holds no named tuple, whose constructor (Python code) would be handed tensors that
  // the engine's workers are changing.
  bool can_build_ahead() const;
  // The result with every tensor leaf its offered object (a new reference; `created` gets them),
  // the structure keeping its own references. Only when can_build_ahead(); the GIL must be
  // held. Valid once reused_every_leaf() holds for the copy's ReusableOutputs::reused; otherwise
  // it is dropped, and rebuild() makes the result from the engine's outputs.
  PyObject* build_ahead(NewTensors& created);
  bool reused_every_leaf(const std::vector<uint8_t>& reused) const;
  // Drops the references to the input's keys and opaque leaves (and to tensors not yet handed to
  // the engine); the GIL must be held. Lent tensors stay lent.
  void clear();
  // Drops only the references to the input's keys, containers' extras and opaque leaves: what
  // the garbage collector may take from a handle while its copy runs (the engine never reads
  // them; offered objects, which it may be writing, stay). No result can be built after it.
  void drop_tape();
  // Takes the lent tensors back from the engine's input and drops their Python objects. Only
  // once the engine is done with its input (its handle destroyed); the GIL must be held.
  void release_lent();
  // Visits the tape's objects (keys, containers' extras, opaque leaves) for the garbage collector
  // of its handle: any of them can refer back to the handle. Not the offered and lent tensor
  // objects: the engine may be using their tensors, and a tensor the collector found unreachable
  // would have its tensor cleared under the engine's workers. Unvisited, they count as held from
  // outside, so a cycle through a lent tensor's own attributes is not freed. Only once the walk
  // is over (its noted leaves are in no other vector then). The GIL must be held.
  int traverse(visitproc visit, void* arg) const;

 private:
  struct Node {
    Kind kind;
    Py_ssize_t size;   // elements of a container (a mapping's entries)
    PyObject* object;  // an opaque leaf, a mapping's key or a container's extra (owned), or null
  };
  // One root element's share of the tensors, for the engine's input.
  struct RootElement {
    size_t first_tensor;
    size_t end_tensor;
    bool is_tensor;  // the element is a tensor leaf itself
  };
  class Reader;

  // The walk (py_walk.cpp). begin_walk() and end_walk() around a whole one: room for the
  // last walk's sizes, then the noted leaves, all taken in, forgotten and this walk's sizes kept.
  void begin_walk();
  void end_walk();
  void walk(PyObject* object, int depth);
  // `extra` (owned, may be null) goes into the container's node.
  void walk_elements(PyObject* container, Kind kind, PyObject* extra, int depth);
  // A dict's (or defaultdict's) entries, each handed to `element(value, key)`.
  template <typename Element>
  void walk_dict_entries(PyObject* dict, Element&& element);
  // A tensor leaf noted for take_tensor_leaves(), its object held, its header asked for.
  void note_tensor_leaf(PyObject* object);
  // A tensor made from a numpy array, noted in the same order.
  void note_array_tensor(at::Tensor tensor);
  void add_object(PyObject* object);
  void add_owned_object(PyObject* object);

  // The noted tensor leaves not yet taken into tensors_, in pre-order, each lent when the rule
  // allows.
  void take_tensor_leaves();
  // In a streamed walk: the root element just walked (roots_.back()) into the feed.
  void put_root_element();
  // The engine's entry for `root`: its tensors (moved out of tensors_) as a tensor list, the
  // tensor itself, or None.
  c10::IValue entry_of(const RootElement& root);
  // One noted leaf's object, whose reference passes to lent_objects_ or is dropped.
  void take_tensor_object(PyObject* object, bool may_lend);
  // The tensors of tensors_ that are lent, back to +0 handles that release nothing.
  void forget_lent_tensors();

  std::vector<Node> tape_;
  // Tensor leaves noted by the walk, in pre-order: their objects (owned), or null for a tensor
  // made from a numpy array, which is in array_tensors_ in the same order.
  std::vector<PyObject*> leaf_objects_;
  std::vector<at::Tensor> array_tensors_;
  size_t leaves_taken_ = 0;                // of leaf_objects_, taken in by take_tensor_leaves()
  size_t arrays_taken_ = 0;                // of array_tensors_
  RootFeed* feed_ = nullptr;               // during a streamed walk
  ReusableOutputs* feed_reuse_ = nullptr;  // its offers
  std::vector<at::Tensor> tensors_;
  std::vector<RootElement> roots_;  // empty when the root is not a container
  bool root_is_container_ = false;
  LendingRule lending_;
  std::vector<bool> lent_;               // by tensor, in pre-order: lent to the engine
  std::vector<PyObject*> lent_objects_;  // their Python objects (owned), held while lent
  c10::IValue engine_input_;             // kept while tensors are lent in it
  // By tensor leaf, when offer_outputs() was called: the tensor object offered (owned) or null,
  // and its leaf's bytes.
  std::vector<PyObject*> offered_;
  std::vector<int64_t> offered_bytes_;
};

}  // namespace mtc::python
