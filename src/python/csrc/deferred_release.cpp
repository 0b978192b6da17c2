#include "deferred_release.h"

#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <utility>

namespace mtc::python {

DeferredRelease& DeferredRelease::instance() {
  static auto* const kept = new DeferredRelease();  // never destroyed: see the header
  return *kept;
}

bool DeferredRelease::set_enabled(bool enabled) {
  const bool previous = enabled_;
  enabled_ = enabled;
  if (!enabled) release_all();
  return previous;
}

size_t DeferredRelease::release_dropped() {
  std::vector<Result> going = take_oldest(1);
  // Only the module references the newest result's first tensor: the program let go of the
  // result (a tensor it kept out of it only loses the module's reference).
  if (!results_.empty() && Py_REFCNT(results_.back().objects.front()) == 1) {
    going.push_back(std::move(results_.back()));
    results_.pop_back();
  }
  return release(std::move(going));
}

void DeferredRelease::keep(NewTensors& tensors) {
  if (!enabled_ || tensors.objects.size() < kMinTensors || tensors.bytes > kMaxResultBytes) return;
  results_.push_back(Result{{}, tensors.bytes});  // may throw: the references stay in `tensors`
  results_.back().objects.swap(tensors.objects);
  tensors.bytes = 0;
  release(take_oldest(kMaxResults));
}

size_t DeferredRelease::release_all() { return release(take_oldest(0)); }

std::vector<DeferredRelease::Result> DeferredRelease::take_oldest(size_t leave) {
  std::vector<Result> taken;
  while (results_.size() > leave) {
    taken.push_back(std::move(results_.front()));
    results_.pop_front();
  }
  return taken;
}

size_t DeferredRelease::release(std::vector<Result> results) {
  size_t released = 0;
  for (Result& result : results) {
    if (instance().prefetch_)
      release_asking_ahead(result.objects);
    else
      for (PyObject* object : result.objects) Py_DECREF(object);
    released += result.objects.size();
  }
  return released;
}

// Dropping a tensor object writes its count, then reads and writes its TensorImpl (the count,
// the storage's and counter's pointers, the sizes), three lines after the object's. A copy ago
// another core made them, or after a gap they are in main memory: one after another, every
// tensor would wait for them. The objects are asked for kObjectsAhead drops ahead, and the
// TensorImpls (whose address is in the object's first line, asked for by then) kImplsAhead
// ahead, so the transfers overlap.
void DeferredRelease::release_asking_ahead(const std::vector<PyObject*>& objects) {
  constexpr size_t kObjectsAhead = 32;
  constexpr size_t kImplsAhead = 16;
  const size_t n = objects.size();
  for (size_t i = 0; i < std::min(n, kObjectsAhead); ++i) __builtin_prefetch(objects[i], 1);
  for (size_t i = 0; i < std::min(n, kImplsAhead); ++i) ask_for_impl(objects[i]);
  for (size_t i = 0; i < n; ++i) {
    if (i + kObjectsAhead < n) __builtin_prefetch(objects[i + kObjectsAhead], 1);
    if (i + kImplsAhead < n) ask_for_impl(objects[i + kImplsAhead]);
    Py_DECREF(objects[i]);
  }
}

// Every object kept is a tensor's (a rebuild wrapped it), still referenced here: its TensorImpl
// is alive.
void DeferredRelease::ask_for_impl(PyObject* object) {
  const char* impl =
      reinterpret_cast<const char*>(THPVariable_Unpack(object).unsafeGetTensorImpl());
  __builtin_prefetch(impl, 1);
  __builtin_prefetch(impl + 64, 1);
  __builtin_prefetch(impl + 128, 1);
}

size_t DeferredRelease::kept_tensors() const {
  size_t tensors = 0;
  for (const Result& result : results_) tensors += result.objects.size();
  return tensors;
}

int64_t DeferredRelease::kept_bytes() const {
  int64_t bytes = 0;
  for (const Result& result : results_) bytes += result.bytes;
  return bytes;
}

}  // namespace mtc::python
