#include "cpu_test_support.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include "structure_compare.h"

namespace mtc::test {

void expect_throws_with(const std::function<void()>& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected a c10::Error mentioning '" << fragment << "'";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message '" << e.what() << "' does not mention '" << fragment << "'";
  }
}

// The copy of `data` fails with a c10::Error mentioning `fragment`: thrown by start_copy, or
// (the structure is walked on the worker) rethrown by get() and by ready().
void expect_copy_fails(const c10::IValue& data, const c10::Device& device,
                       const CopyOptions& options, const std::string& fragment) {
  CopyHandle h;
  try {
    h = start_copy(data, device, options);
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message '" << e.what() << "' does not mention '" << fragment << "'";
    return;
  }
  expect_throws_with([&] { h.get(); }, fragment);
  expect_throws_with([&] { (void)h.ready(); }, fragment);
  expect_throws_with([&] { h.get(); }, fragment);  // on every call
}

// A batch of every container kind and passthrough leaf, with tensors of several dtypes,
// layouts and sizes. `tensors` receives its tensor leaves in order.
c10::IValue mixed_batch(std::vector<at::Tensor>& tensors) {
  auto add = [&tensors](at::Tensor t) {
    tensors.push_back(t);
    return t;
  };
  c10::impl::GenericDict cam(c10::StringType::get(), c10::TensorType::get());
  cam.insert(std::string("boxes"), add(at::arange(40, at::kFloat).reshape({10, 4})));
  cam.insert(std::string("ids"), add(at::arange(10, at::kLong)));
  cam.insert(std::string("active"), add(at::ones({10}, at::kBool)));
  c10::impl::GenericDict by_int(c10::IntType::get(), c10::AnyType::get());
  by_int.insert(int64_t{3}, add(at::arange(6, at::kDouble).reshape({2, 3}).t()));  // transposed
  by_int.insert(int64_t{1}, std::string("label"));
  c10::List<at::Tensor> typed;
  typed.push_back(add(at::zeros({0}, at::kFloat)));                     // zero-size
  typed.push_back(add(at::arange(1 << 18, at::kInt)));                  // 1 MiB
  typed.push_back(add(at::arange(20, at::kShort).slice(0, 0, 20, 3)));  // strided
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(cam);
  list.push_back(by_int);
  list.push_back(typed);
  list.push_back(c10::ivalue::Tuple::create(
      {c10::IValue(add(at::full({}, 7.0))), c10::IValue(int64_t{5}), c10::IValue(1.5),
       c10::IValue(true), c10::IValue(), c10::IValue(std::string("s"))}));
  list.push_back(c10::impl::GenericList(c10::AnyType::get()));
  return list;
}

// `out` has the shape of `in` with new containers, and every tensor is the input's own: a copy
// to the CPU returns CPU tensors as they are.
void expect_same_structure_same_tensors(const c10::IValue& out, const c10::IValue& in) {
  mtc::test::expect_same_structure(out, in, mtc::test::expect_same_tensor);
}

}  // namespace mtc::test
