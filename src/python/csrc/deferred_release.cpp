#include "deferred_release.h"

#include <algorithm>

namespace mtc::python {

DeferredRelease& DeferredRelease::instance() {
  static DeferredRelease* const kept = new DeferredRelease();  // see the header: never destroyed
  return *kept;
}

void DeferredRelease::set_enabled(bool enabled) {
  enabled_ = enabled;
  if (!enabled) release_all();
}

size_t DeferredRelease::keep(const NewTensors& tensors) {
  // Tensors still kept from earlier results take their share of the next wait first.
  const size_t room = budget_ > objects_.size() ? budget_ - objects_.size() : 0;
  const size_t count = std::min(room, tensors.objects.size());
  if (!enabled_ || count == 0 || tensors.objects.size() < kMinTensors ||
      tensors.total_bytes > kMaxResultBytes)
    return 0;
  int64_t bytes = 0;
  for (size_t i = 0; i < count; ++i) {
    Py_INCREF(tensors.objects[i]);
    objects_.push_back(tensors.objects[i]);
    bytes += tensors.bytes[i];
  }
  results_.push_back({count, bytes});
  size_t released = 0;
  for (; results_.size() > kMaxResults && !objects_.empty(); ++released) release_front();
  return released;
}

void DeferredRelease::learn(size_t released, bool wanted_more) {
  constexpr size_t kMaxBudget = size_t{1} << 20;
  budget_ = wanted_more ? std::min(kMaxBudget, 2 * std::max(budget_, released))
                        : std::max(kProbe, released);
}

void DeferredRelease::release_front() {
  PyObject* object = objects_.front();
  objects_.pop_front();
  if (--results_.front().tensors == 0) results_.pop_front();
  Py_DECREF(object);
}

bool DeferredRelease::release_some(size_t count) {
  for (; count > 0 && !objects_.empty(); --count) release_front();
  return !objects_.empty();
}

size_t DeferredRelease::release_all() {
  size_t released = 0;
  for (; !objects_.empty(); ++released) release_front();
  return released;
}

int64_t DeferredRelease::kept_bytes() const {
  int64_t bytes = 0;
  for (const Result& result : results_) bytes += result.bytes;
  return bytes;
}

}  // namespace mtc::python
