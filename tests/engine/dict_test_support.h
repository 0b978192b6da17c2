// What the output-dict tests (dict_stash_test.cpp, dict_shelf_test.cpp) share: the element types
// they make dicts of (each one object for the process, as a walk's dicts share their input's
// types), and their checks of results and of a switch read from the environment.
#pragma once

#include <ATen/core/jit_type.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace mtc::detail::dict_test {

inline const c10::TypePtr& str() {
  static const c10::TypePtr type = c10::StringType::get();
  return type;
}
inline const c10::TypePtr& any() {
  static const c10::TypePtr type = c10::AnyType::get();
  return type;
}
inline const c10::TypePtr& tensor() {
  static const c10::TypePtr type = c10::TensorType::get();
  return type;
}

// No two of `objects` (results' dicts) are one.
inline void expect_distinct(std::vector<const void*> objects) {
  std::sort(objects.begin(), objects.end());
  EXPECT_EQ(std::adjacent_find(objects.begin(), objects.end()), objects.end());
}

// A switch on unless `variable` says 0 (read with the worker pools, which the caller made).
inline void expect_on_unless_zero(const char* variable, bool enabled) {
  const char* setting = std::getenv(variable);
  if (setting == nullptr || *setting == '\0')
    EXPECT_TRUE(enabled);
  else
    EXPECT_EQ(enabled, std::string(setting) == "1");
}

}  // namespace mtc::detail::dict_test
