#include "detail/type_twins.h"

#include <atomic>
#include <utility>
#include <vector>

namespace mtc::detail {
namespace {
std::atomic<bool> twins_on{true};
}  // namespace

void TypeTwins::set_enabled(bool on) { twins_on.store(on, std::memory_order_relaxed); }
bool TypeTwins::enabled() { return twins_on.load(std::memory_order_relaxed); }

bool TypeTwins::twinnable(const c10::Type& type) {
  switch (type.kind()) {
    case c10::TypeKind::TensorType:
    case c10::TypeKind::ListType:
    case c10::TypeKind::DictType:
    case c10::TypeKind::OptionalType:
      return true;
    default:
      return false;
  }
}

c10::TypePtr TypeTwins::make(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::TensorType) {
    // withRequiresGrad copies every property, then sets the one it is given: here, the same.
    const std::shared_ptr<c10::TensorType> tensor = type->cast<c10::TensorType>();
    return tensor->withRequiresGrad(tensor->requiresGrad());
  }
  std::vector<c10::TypePtr> contained;
  for (const c10::TypePtr& inner : type->containedTypes()) contained.push_back(twin(inner));
  return type->createWithContained(std::move(contained));
}

c10::TypePtr TypeTwins::twin(const c10::TypePtr& type) {
  for (const Pair& pair : pairs_)
    if (pair.original == type.get()) return pair.twin;
  if (!twinnable(*type) || !enabled()) return type;
  c10::TypePtr made = make(type);
  pairs_.push_back({type.get(), type, made});
  return made;
}

}  // namespace mtc::detail
