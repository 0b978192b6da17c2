// One walker for every test that compares a copied structure with its input: same container
// kinds, sizes, order, keys, element types and passthrough leaves, and new containers. What a
// tensor leaf must be differs from test to test (the input itself, a bitwise copy on another
// device, a tensor the test placed), so each one passes its own leaf check.
#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace mtc::test {

// Checks one output tensor leaf against its input. `leaf` counts the tensor leaves of the input
// from 0 in pre-order, the order the engine's walk hands them out in.
using LeafCheck = std::function<void(const at::Tensor& out, const at::Tensor& in, size_t leaf)>;

// The leaf check of copies that must return their tensors as they are.
inline void expect_same_tensor(const at::Tensor& out, const at::Tensor& in, size_t leaf) {
  EXPECT_TRUE(out.is_same(in)) << "leaf " << leaf << " is not the input tensor itself";
}

class StructureComparer {
 public:
  explicit StructureComparer(const LeafCheck& check) : check_(check) {}

  void compare(const c10::IValue& out, const c10::IValue& in, const std::string& path) {
    ASSERT_EQ(out.tagKind(), in.tagKind()) << "at " << path;
    if (in.isTensor()) {
      SCOPED_TRACE("tensor leaf at " + path);
      check_(out.toTensor(), in.toTensor(), leaves_++);
    } else if (in.isList()) {
      EXPECT_FALSE(out.is(in)) << "the list at " << path << " is the input's, not a new one";
      EXPECT_EQ(*out.toList().elementType(), *in.toList().elementType()) << "at " << path;
      const c10::ArrayRef<c10::IValue> a = out.toListRef();
      const c10::ArrayRef<c10::IValue> b = in.toListRef();
      ASSERT_EQ(a.size(), b.size()) << "at " << path;
      for (size_t i = 0; i < b.size(); ++i)
        compare(a[i], b[i], path + "[" + std::to_string(i) + "]");
    } else if (in.isTuple()) {
      EXPECT_FALSE(out.is(in)) << "the tuple at " << path << " is the input's, not a new one";
      const auto& a = out.toTupleRef().elements();
      const auto& b = in.toTupleRef().elements();
      ASSERT_EQ(a.size(), b.size()) << "at " << path;
      for (size_t i = 0; i < b.size(); ++i)
        compare(a[i], b[i], path + "(" + std::to_string(i) + ")");
    } else if (in.isGenericDict()) {
      EXPECT_FALSE(out.is(in)) << "the dict at " << path << " is the input's, not a new one";
      const c10::impl::GenericDict a = out.toGenericDict();
      const c10::impl::GenericDict b = in.toGenericDict();
      EXPECT_EQ(*a.keyType(), *b.keyType()) << "at " << path;
      EXPECT_EQ(*a.valueType(), *b.valueType()) << "at " << path;
      ASSERT_EQ(a.size(), b.size()) << "at " << path;
      auto ia = a.begin();
      for (auto ib = b.begin(); ib != b.end(); ++ib, ++ia) {
        std::ostringstream key;
        if (ib->key().isTensor()) {
          key << "<tensor>";  // printing it would read its values, maybe on a device
        } else {
          key << ib->key();
        }
        // Same keys in the same (insertion) order; a tensor key is kept as it is, not copied.
        EXPECT_TRUE(ib->key().isTensor() ? ia->key().is(ib->key()) : ia->key() == ib->key())
            << "at " << path << ": key " << key.str() << " out of order or changed";
        compare(ia->value(), ib->value(), path + "{" + key.str() + "}");
      }
    } else if (!in.isNone()) {
      EXPECT_TRUE(out == in) << "passthrough leaf at " << path << " changed: " << in.tagKind();
    }
  }

  size_t leaves() const { return leaves_; }

 private:
  const LeafCheck& check_;
  size_t leaves_ = 0;
};

// Compares `out` with `in` and returns how many tensor leaves were checked.
inline size_t expect_same_structure(const c10::IValue& out, const c10::IValue& in,
                                    const LeafCheck& check) {
  StructureComparer comparer(check);
  comparer.compare(out, in, "root");
  return comparer.leaves();
}

// The tensor leaves of `v` in pre-order (dict values in insertion order; keys are not leaves).
inline void collect_tensors(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) collect_tensors(e, out);
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements()) collect_tensors(e, out);
  } else if (v.isGenericDict()) {
    for (const auto& e : v.toGenericDict()) collect_tensors(e.value(), out);
  }
}

inline std::vector<at::Tensor> tensors_of(const c10::IValue& v) {
  std::vector<at::Tensor> out;
  collect_tensors(v, out);
  return out;
}

// A list of `elements` lists of `per_element` tensors, make(k) being the k-th of each: large
// enough (from ~256 leaves) for the engine to walk it in parts.
inline c10::impl::GenericList list_of_lists(int elements, int per_element,
                                            const std::function<at::Tensor(int)>& make) {
  c10::impl::GenericList root(c10::AnyType::get());
  for (int i = 0; i < elements; ++i) {
    c10::impl::GenericList element(c10::AnyType::get());
    for (int k = 0; k < per_element; ++k) element.push_back(make(k));
    root.push_back(element);
  }
  return root;
}

}  // namespace mtc::test
