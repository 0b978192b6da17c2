// PyStructure's streamed walk split among the engine's threads. The caller holds the GIL while
// it waits in walk_parallel_into(): no Python code runs anywhere meanwhile, so the engine's
// workers may read the Python structure without the GIL, as long as they only read. Each worker
// that reaches a root element nobody has claimed walks it (produce_element) right before copying
// it, on its own core, while the caller walks elements from the last one back. What a worker
// cannot walk without running Python code (other containers, numpy arrays, tensor subclasses,
// tensors the engine does not pack) it declines, and the caller walks it once every worker is
// done with the structure.
//
// References: the walk keeps one on every key, opaque leaf and tensor object it records. Several
// threads may count the same object at once (the keys every dict of a batch shares, None), so a
// worker adds its counts atomically, once its element's walk has succeeded, each object's
// repeats in one addition. An object immortal in the running Python (3.12 on) is left as it is.
#include <c10/util/MaybeOwned.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>

#include "py_structure.h"
#include "py_walk_errors.h"

namespace mtc::python {
namespace {

std::atomic<bool> parallel_walk{true};

// A worker declines an element nested deeper than this: the caller's walk checks the limit and
// the thread's stack.
constexpr int kMaxFastDepth = 64;
// An element whose leaves get no offered outputs: its first leaf is past every offer.
constexpr int64_t kNoSlot = std::numeric_limits<int64_t>::max() / 2;
constexpr size_t kNoLeafSlot = std::numeric_limits<size_t>::max();

// The leaves of each element of this thread's last streamed walk.
thread_local std::vector<size_t> last_element_leaves;

void add_references(PyObject* object, Py_ssize_t count) {
#if PY_VERSION_HEX >= 0x030C0000
  if (_Py_IsImmortal(object)) return;
#endif
  __atomic_fetch_add(&object->ob_refcnt, count, __ATOMIC_RELAXED);
}

// References to take once an element's walk has succeeded; repeats of the last few objects
// (a batch's shared keys) are counted together.
class References {
 public:
  void add(PyObject* object) {
    Entry& entry = recent_[(reinterpret_cast<uintptr_t>(object) >> 4) % kRecent];
    if (entry.object == object) {
      ++entry.count;
      return;
    }
    if (entry.object != nullptr) spilled_.push_back(entry);
    entry = {object, 1};
  }
  void take() const noexcept {
    for (const Entry& entry : recent_)
      if (entry.object != nullptr) add_references(entry.object, entry.count);
    for (const Entry& entry : spilled_) add_references(entry.object, entry.count);
  }

 private:
  struct Entry {
    PyObject* object = nullptr;
    Py_ssize_t count = 0;
  };
  static constexpr size_t kRecent = 8;
  Entry recent_[kRecent];
  std::vector<Entry> spilled_;
};

}  // namespace

bool set_parallel_walk(bool enabled) { return parallel_walk.exchange(enabled); }

// The walk of one element on any thread: exact containers, lent tensors and plain leaves only.
// walk() returns false for anything else, having changed nothing outside the record.
class PyStructure::FastWalk {
 public:
  FastWalk(const LendingRule& lending, ElementRecord& record) : lending_(lending), record_(record) {}

  bool walk(PyObject* object, int depth) {
    PyTypeObject* type = Py_TYPE(object);
    if (type == &PyList_Type || type == &PyTuple_Type) {
      const bool list = type == &PyList_Type;
      PyObject** items = list ? reinterpret_cast<PyListObject*>(object)->ob_item
                              : reinterpret_cast<PyTupleObject*>(object)->ob_item;
      const Py_ssize_t size = list ? PyList_GET_SIZE(object) : PyTuple_GET_SIZE(object);
      return sequence(list ? Kind::kList : Kind::kTuple, items, size, depth);
    }
    if (type == &PyDict_Type) return dict(object, depth);
    if (THPVariable_CheckExact(object)) return tensor(object);
    if (!is_plain_leaf(object)) return false;
    references.add(object);
    record_.tape.push_back({Kind::kObject, 0, object});
    return true;
  }

  References references;

 private:
  static constexpr Py_ssize_t kAhead = 8;

  bool sequence(Kind kind, PyObject** items, Py_ssize_t size, int depth) {
    if (depth >= kMaxFastDepth) return false;
    record_.tape.push_back({kind, size, nullptr});
    for (Py_ssize_t i = 0; i < std::min(kAhead, size); ++i) __builtin_prefetch(items[i]);
    for (Py_ssize_t i = 0; i < size; ++i) {
      if (i + kAhead < size) __builtin_prefetch(items[i + kAhead]);
      if (!walk(items[i], depth + 1)) return false;
    }
    return true;
  }

  // Entries gathered a few at a time, each value asked for before the first is walked.
  bool dict(PyObject* object, int depth) {
    if (depth >= kMaxFastDepth) return false;
    record_.tape.push_back({Kind::kDict, PyDict_GET_SIZE(object), nullptr});
    constexpr int kGathered = 16;
    PyObject* keys[kGathered];
    PyObject* values[kGathered];
    Py_ssize_t position = 0;
    for (bool more = true; more;) {
      int count = 0;
      PyObject* key = nullptr;
      PyObject* value = nullptr;
      while (count < kGathered && (more = PyDict_Next(object, &position, &key, &value))) {
        __builtin_prefetch(value);
        keys[count] = key;
        values[count++] = value;
      }
      for (int i = 0; i < count; ++i) {
        references.add(keys[i]);
        record_.tape.push_back({Kind::kObject, 0, keys[i]});
        if (!walk(values[i], depth + 1)) return false;
      }
    }
    return true;
  }

  // Only a tensor the engine packs, whose header answers without Python (no Python dispatch, no
  // symbolic sizes): lent to the engine as the caller's walk would lend it.
  bool tensor(PyObject* object) {
    const at::Tensor& tensor = THPVariable_Unpack(object);
    const c10::TensorImpl* impl = tensor.unsafeGetTensorImpl();
    if (!tensor.defined() || impl->is_python_dispatch() || impl->has_symbolic_sizes_strides() ||
        !lending_.lends(tensor))
      return false;
    record_.tape.push_back({Kind::kTensor, 0, nullptr});
    record_.objects.push_back(object);
    return true;
  }

  const LendingRule& lending_;
  ElementRecord& record_;
};

bool PyStructure::prepare_parallel(PyObject* root, size_t elements) {
#ifdef Py_GIL_DISABLED
  return false;  // references are counted differently there
#endif
  if (!parallel_walk.load(std::memory_order_relaxed) || !lending_.enabled ||
      last_element_leaves.size() != elements || elements < 2)
    return false;
  elements_.reserve(elements);
  element_keys_.reserve(elements);
  if (PyDict_CheckExact(root)) {
    Py_ssize_t position = 0;
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    while (PyDict_Next(root, &position, &key, &value)) {
      element_keys_.push_back(key);
      elements_.push_back(value);
    }
  } else {
    const bool list = PyList_CheckExact(root);
    for (size_t i = 0; i < elements; ++i)
      elements_.push_back(list ? PyList_GET_ITEM(root, i) : PyTuple_GET_ITEM(root, i));
  }
  root_kind_ = PyDict_CheckExact(root) ? Kind::kDict
               : PyList_CheckExact(root) ? Kind::kList
                                         : Kind::kTuple;
  records_.resize(elements);
  slot_leaves_ = last_element_leaves;
  slot_first_.resize(elements);
  std::exclusive_scan(slot_leaves_.begin(), slot_leaves_.end(), slot_first_.begin(), size_t{0});
  root_is_container_ = true;
  return true;
}

void PyStructure::attach_feed(RootFeed& feed, ReusableOutputs* reuse) {
  parallel_feed_ = &feed;
  feed_reuse_ = reuse;
  engine_input_ = feed.root();  // where release_lent() finds the lent tensors
}

bool PyStructure::produce_element(int64_t i) noexcept {
  ElementRecord& record = records_[static_cast<size_t>(i)];
  try {
    FastWalk walk(lending_, record);
    if (!walk.walk(elements_[static_cast<size_t>(i)], 1)) {
      record = ElementRecord();
      return false;
    }
    record.is_tensor = record.tape.front().kind == Kind::kTensor;
    // The entry as entry_of() makes it, of borrowed tensors; room made first, so that nothing
    // borrowed is ever released by a failing allocation.
    c10::IValue entry;
    if (record.is_tensor) {
      entry = c10::MaybeOwnedTraits<at::Tensor>::createBorrow(
          THPVariable_Unpack(record.objects.front()));
    } else if (!record.objects.empty()) {
      c10::List<at::Tensor> part;
      part.reserve(record.objects.size());
      for (PyObject* object : record.objects)
        part.push_back(c10::MaybeOwnedTraits<at::Tensor>::createBorrow(THPVariable_Unpack(object)));
      entry = std::move(part);
    }
    // Nothing below throws. The offers' slots of different elements never overlap.
    const size_t e = static_cast<size_t>(i);
    if (feed_reuse_ != nullptr) {
      const bool offered = slot_leaves_[e] == record.objects.size();
      feed_reuse_->element_first_leaf[e] = offered ? static_cast<int64_t>(slot_first_[e]) : kNoSlot;
      for (size_t k = 0; offered && k < record.objects.size(); ++k) {
        const size_t slot = slot_first_[e] + k;
        if (slot < offered_bytes_.size())
          offered_bytes_[slot] = static_cast<int64_t>(THPVariable_Unpack(record.objects[k]).nbytes());
      }
    }
    walk.references.take();
    for (PyObject* object : record.objects) add_references(object, 1);
    record.produced = true;
    parallel_feed_->put_at(i, std::move(entry));
    return true;
  } catch (...) {
    record = ElementRecord();
    return false;
  }
}

void PyStructure::walk_parallel_into(RootFeed& feed) {
  const size_t n = elements_.size();
  // From the last element back: the engine's threads take them from the first on.
  for (size_t e = n; e-- > 0;)
    if (feed.claim(static_cast<int64_t>(e)) && !produce_element(static_cast<int64_t>(e)))
      feed.decline(static_cast<int64_t>(e));
  feed.wait_settled();
  // No other thread reads the structure from here on.
  size_t merged = 0;
  try {
    // Room for the records, so that merging them after a failure has nothing left to allocate.
    size_t nodes = 1 + element_keys_.size();
    size_t leaves = 0;
    for (const ElementRecord& record : records_) {
      nodes += record.tape.size();
      leaves += record.objects.size();
    }
    begin_walk();
    tape_.reserve(nodes);
    lent_.reserve(leaves);
    tensors_.reserve(leaves);
    lent_objects_.reserve(leaves);
    roots_.reserve(n);
    tape_.push_back({root_kind_, static_cast<Py_ssize_t>(n), nullptr});
    for (; merged < n; ++merged) merge_element(merged);
  } catch (...) {
    merge_after_failure(merged);
    parallel_feed_ = nullptr;
    feed.abandon();
    rethrow_walk_error();
  }
  parallel_feed_ = nullptr;
  tensors_.clear();  // moved into the feed's entries
  // Where each leaf's offered output is, unless every element's slots are its own leaves.
  bool own_slots = true;
  for (size_t e = 0; e < n; ++e) {
    const RootElement& root = roots_[e];
    own_slots = own_slots && slot_leaves_[e] == root.end_tensor - root.first_tensor &&
                slot_first_[e] == root.first_tensor;
  }
  if (!own_slots && feed_reuse_ != nullptr) {
    leaf_slot_.assign(lent_.size(), kNoLeafSlot);
    for (size_t e = 0; e < n; ++e) {
      const RootElement& root = roots_[e];
      if (slot_leaves_[e] != root.end_tensor - root.first_tensor) continue;
      for (size_t leaf = root.first_tensor; leaf < root.end_tensor; ++leaf)
        leaf_slot_[leaf] = slot_first_[e] + (leaf - root.first_tensor);
    }
  }
  remember_element_leaves();
  end_walk();
}

void PyStructure::merge_element(size_t e) {
  if (!element_keys_.empty()) add_object(element_keys_[e]);
  ElementRecord& record = records_[e];
  const size_t first = lent_.size();
  if (record.produced) {
    const size_t leaves = record.objects.size();
    tape_.insert(tape_.end(), record.tape.begin(), record.tape.end());
    record.tape.clear();  // the references are the tape's now
    lent_.resize(first + leaves, true);
    tensors_.resize(first + leaves);  // their tensors are in the feed's entry
    lent_objects_.insert(lent_objects_.end(), record.objects.begin(), record.objects.end());
    record.objects.clear();
    roots_.push_back({first, first + leaves, record.is_tensor});
    return;
  }
  // Declined: walked here, as walk_into() walks an element.
  const size_t first_node = tape_.size();
  try {
    walk(elements_[e], 1);
  } catch (PathError& error) {
    error.path = place_part(element_keys_.empty() ? nullptr : element_keys_[e], e) + error.path;
    throw;
  }
  take_tensor_leaves();
  roots_.push_back({first, lent_.size(), tape_[first_node].kind == Kind::kTensor});
  const RootElement& root = roots_.back();
  if (feed_reuse_ != nullptr) {
    const bool offered = slot_leaves_[e] == root.end_tensor - root.first_tensor;
    feed_reuse_->element_first_leaf[e] = offered ? static_cast<int64_t>(slot_first_[e]) : kNoSlot;
    for (size_t leaf = root.first_tensor; offered && leaf < root.end_tensor; ++leaf) {
      const size_t slot = slot_first_[e] + (leaf - root.first_tensor);
      if (lent_[leaf] && slot < offered_bytes_.size())
        offered_bytes_[slot] = static_cast<int64_t>(tensors_[leaf].nbytes());
    }
  }
  parallel_feed_->put_at(static_cast<int64_t>(e), entry_of(root));
}

void PyStructure::merge_after_failure(size_t failed) noexcept {
  // The failed element put nothing: an empty place keeps roots_ numbered as the elements are.
  const auto empty_root = [this] { roots_.push_back({lent_.size(), lent_.size(), false}); };
  try {
    if (roots_.size() == failed) empty_root();
    for (size_t e = failed + 1; e < records_.size(); ++e) {
      if (records_[e].produced) {
        merge_element(e);
      } else {
        empty_root();
      }
    }
  } catch (...) {
    // Out of memory while merging: what stays in a record is leaked rather than released
    // while the engine may still read its tensors.
  }
}

void PyStructure::remember_element_leaves() const {
  try {
    last_element_leaves.resize(roots_.size());
    for (size_t e = 0; e < roots_.size(); ++e)
      last_element_leaves[e] = roots_[e].end_tensor - roots_[e].first_tensor;
  } catch (...) {
    last_element_leaves.clear();
  }
}

}  // namespace mtc::python
