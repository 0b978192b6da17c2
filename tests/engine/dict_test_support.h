// What the output-dict tests (dict_stash_test.cpp, dict_shelf_test.cpp) share: the element types
// they make dicts of (each one object for the process, as a walk's dicts share their input's
// types), the engine copies' input of five-tensor dicts, and their checks of results and of a
// switch read from the environment.
#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "structure_test_support.h"

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

// "k3" for ("k", 3); appended, not operator+ (GCC 12's -Wrestrict misfires on that).
inline std::string key(const char* prefix, size_t i) {
  std::string text(prefix);
  text += std::to_string(i);
  return text;
}

// No two of `objects` (results' dicts) are one.
inline void expect_distinct(std::vector<const void*> objects) {
  std::sort(objects.begin(), objects.end());
  EXPECT_EQ(std::adjacent_find(objects.begin(), objects.end()), objects.end());
}

// A dict of five tensors, "t0" to "t4" holding 1 to 5: an element of the copies' input.
inline c10::IValue five_tensors() {
  c10::Dict<std::string, at::Tensor> dict;
  for (size_t i = 0; i < 5; ++i)
    dict.insert(key("t", i), structure_test::tensor_of(static_cast<double>(i) + 1));
  return c10::impl::toGenericDict(std::move(dict));
}

// Every one of `results` is a list of `elements` copies of five_tensors(), keys and values, and no
// two of their dicts are one.
inline void expect_copies_of_five_tensors(const std::vector<c10::IValue>& results,
                                          size_t elements) {
  std::vector<const void*> dicts;
  for (const c10::IValue& result : results) {
    const auto list = result.toListRef();
    ASSERT_EQ(list.size(), elements);
    for (const c10::IValue& element : list) {
      const c10::impl::GenericDict dict = element.toGenericDict();
      dicts.push_back(element.internalToPointer());
      ASSERT_EQ(dict.size(), 5u);
      size_t i = 0;
      for (const auto& entry : dict) {
        EXPECT_EQ(entry.key().toStringRef(), key("t", i));
        EXPECT_TRUE(
            entry.value().toTensor().equal(structure_test::tensor_of(static_cast<double>(i) + 1)));
        ++i;
      }
    }
  }
  expect_distinct(std::move(dicts));
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
