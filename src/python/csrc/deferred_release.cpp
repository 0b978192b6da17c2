#include "deferred_release.h"

#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <atomic>
#include <utility>

namespace mtc::python {
namespace {

std::atomic<bool> prefetch_on{true};

// A kept result's tensors were made two copies ago, their tensor headers by a worker on another
// core: tearing one down waits for its Python object, then for its TensorImpl, each in another
// cache or in memory. So objects are asked for kObjectsAhead tensors ahead and, once there, their
// TensorImpls kImplsAhead ahead; the transfers overlap instead of coming one after another.
constexpr size_t kObjectsAhead = 16;
constexpr size_t kImplsAhead = 8;

void ask_for_object(PyObject* object) {
  // The garbage collector's header sits before the object, which is 40 bytes long.
  const char* start = reinterpret_cast<const char*>(object);
  __builtin_prefetch(start - 16, 1);
  __builtin_prefetch(start + 32, 1);
}

void ask_for_impl(PyObject* object) {
  // The count, the storage, the sizes and strides, the Python object's slot: about 200 bytes.
  const char* impl =
      reinterpret_cast<const char*>(THPVariable_Unpack(object).unsafeGetTensorImpl());
  for (int line = 0; line < 4; ++line) __builtin_prefetch(impl + 64 * line, 1);
}

}  // namespace

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
  std::vector<Result> going;
  while (results_.size() > 1) {
    going.push_back(std::move(results_.front()));
    results_.pop_front();
  }
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
  std::vector<Result> going;
  while (results_.size() > kMaxResults) {
    going.push_back(std::move(results_.front()));
    results_.pop_front();
  }
  release(std::move(going));
}

size_t DeferredRelease::release_all() {
  std::vector<Result> going;
  for (Result& result : results_) going.push_back(std::move(result));
  results_.clear();
  return release(std::move(going));
}

bool DeferredRelease::set_prefetch(bool prefetch) { return prefetch_on.exchange(prefetch); }

size_t DeferredRelease::release(std::vector<Result> results) {
  size_t released = 0;
  for (Result& result : results) {
    release_objects(result.objects);
    released += result.objects.size();
  }
  return released;
}

// Every object is a tensor object the rebuild made, alive while the module holds it.
void DeferredRelease::release_objects(const std::vector<PyObject*>& objects) {
  const size_t count = objects.size();
  if (prefetch_on.load(std::memory_order_relaxed)) {
    for (size_t i = 0; i < std::min(kObjectsAhead, count); ++i) ask_for_object(objects[i]);
    for (size_t i = 0; i < std::min(kImplsAhead, count); ++i) ask_for_impl(objects[i]);
    for (size_t i = 0; i < count; ++i) {
      if (i + kObjectsAhead < count) ask_for_object(objects[i + kObjectsAhead]);
      if (i + kImplsAhead < count) ask_for_impl(objects[i + kImplsAhead]);
      Py_DECREF(objects[i]);
    }
    return;
  }
  for (PyObject* object : objects) Py_DECREF(object);
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
