#include "deferred_release.h"

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
    for (PyObject* object : result.objects) Py_DECREF(object);
    released += result.objects.size();
  }
  return released;
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
