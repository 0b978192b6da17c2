// Tensor leaves the engine cannot copy: sparse (COO, CSR, CSC), MKL-DNN, quantized, nested and
// meta tensors. Each fails the copy with an error that names the leaf and says what is wrong
// with it, whatever the target, and the engine copies the next structure as usual. Quantized
// and nested tensors have a strided layout like plain ones, so nothing but an explicit check
// stops them: packed, they became plain views of their bytes (a quantized tensor without its
// scale, a nested one without its sizes).
//
// The CPU target and the walk for a CUDA target (which makes no CUDA call) run everywhere; whole
// copies to and from a GPU skip without one.
#include <ATen/Context.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/_nested_tensor_from_tensor_list.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/quantize_per_tensor.h>
#include <ATen/ops/sparse_coo_tensor.h>
#include <ATen/ops/to_mkldnn.h>
#include <ATen/ops/to_sparse_csc.h>
#include <ATen/ops/to_sparse_csr.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "detail/leaf_router.h"
#include "detail/structure.h"
#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "structure_compare.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::start_copy;
using mtc::test::expect_structure_copy;
using mtc::test::GpuTest;
using mtc::test::kCpu;
using mtc::test::kCuda0;

struct Unsupported {
  std::string name;
  // Made on demand: some kinds exist only on some devices or builds.
  std::function<at::Tensor(const c10::Device&)> make;
  std::string fragment;  // what the error must say about the leaf
  bool on_cuda;          // whether torch can make one on a GPU
};

at::Tensor dense(const c10::Device& device) {
  return at::ones({4, 4}, at::TensorOptions().device(device));
}

std::vector<Unsupported> unsupported_kinds() {
  std::vector<Unsupported> kinds{
      {"sparse COO",
       [](const c10::Device& d) {
         return at::sparse_coo_tensor(at::zeros({1, 2}, at::TensorOptions(at::kLong).device(d)),
                                      at::ones({2}, at::TensorOptions().device(d)), {4});
       },
       "layout Sparse", true},
      {"sparse CSR", [](const c10::Device& d) { return dense(d).to_sparse_csr(); },
       "layout SparseCsr", true},
      {"sparse CSC", [](const c10::Device& d) { return dense(d).to_sparse_csc(); },
       "layout SparseCsc", true},
      {"quantized",
       [](const c10::Device& d) { return at::quantize_per_tensor(dense(d), 0.1, 0, at::kQInt8); },
       "quantized", true},
      {"nested",
       [](const c10::Device& d) {
         return at::_nested_tensor_from_tensor_list({at::ones({2}, at::TensorOptions().device(d)),
                                                     at::ones({3}, at::TensorOptions().device(d))});
       },
       "nested", true},
      {"meta",
       [](const c10::Device&) { return at::empty({3}, at::TensorOptions().device(c10::kMeta)); },
       "only cpu and cuda", false},
  };
  if (at::hasMKLDNN()) {
    kinds.push_back({"mkldnn", [](const c10::Device&) { return dense(kCpu).to_mkldnn(); },
                     "layout Mkldnn", false});
  }
  return kinds;
}

// The bad leaf third of three, inside a tuple inside a list: the error must point at it.
c10::IValue structure_around(const at::Tensor& bad, const c10::Device& device) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(dense(device));
  list.push_back(c10::ivalue::Tuple::create({c10::IValue(dense(device)), c10::IValue(bad)}));
  return list;
}

void expect_error_mentions(const c10::Error& e, const std::string& fragment,
                           const std::string& leaf) {
  const std::string what = e.what_without_backtrace();
  EXPECT_NE(what.find(fragment), std::string::npos)
      << "'" << what << "' lacks '" << fragment << "'";
  EXPECT_NE(what.find(leaf), std::string::npos) << "'" << what << "' does not name " << leaf;
}

// The copy fails from get() (and ready(), and every later get()), never from start_copy.
void expect_copy_fails(const c10::IValue& data, const c10::Device& target,
                       const std::string& fragment) {
  const std::string leaf = data.isTensor() ? "tensor leaf 0" : "tensor leaf 2";
  for (const bool background : {true, false}) {
    SCOPED_TRACE(background ? "background thread" : "on the caller");
    CopyOptions options;
    options.use_background_thread = background;
    CopyHandle h;
    ASSERT_NO_THROW(h = start_copy(data, target, options)) << "the walk's error belongs to get()";
    try {
      h.get();
      ADD_FAILURE() << "get() returned";
    } catch (const c10::Error& e) {
      expect_error_mentions(e, fragment, leaf);
    }
    EXPECT_THROW((void)h.ready(), c10::Error);
    EXPECT_THROW(h.get(), c10::Error);
  }
}

TEST(UnsupportedInput, EachKindFailsACopyToTheCpuNamingTheLeaf) {
  for (const Unsupported& kind : unsupported_kinds()) {
    SCOPED_TRACE(kind.name);
    expect_copy_fails(kind.make(kCpu), kCpu, kind.fragment);
    expect_copy_fails(structure_around(kind.make(kCpu), kCpu), kCpu, kind.fragment);
  }
  const c10::IValue good = structure_around(dense(kCpu), kCpu);
  mtc::test::expect_same_structure(start_copy(good, kCpu).get(), good,
                                   mtc::test::expect_same_tensor);
}

// The walk for a CUDA target is where a CPU leaf would be packed: it must refuse each kind before
// anything is planned for it. It makes no CUDA call, so this runs without a GPU.
TEST(UnsupportedInput, EachKindIsRefusedByTheWalkToAGpu) {
  for (const Unsupported& kind : unsupported_kinds()) {
    SCOPED_TRACE(kind.name);
    for (const bool pack : {true, false}) {
      CopyOptions options;
      options.pack_cpu_tensors = pack;
      mtc::CopyStats stats;
      mtc::detail::LeafRouter router(kCuda0, options, stats);
      c10::IValue out;
      try {
        mtc::detail::StructureCopier<mtc::detail::LeafRouter>(router).copy(
            structure_around(kind.make(kCpu), kCpu), out);
        ADD_FAILURE() << "the walk accepted the leaf";
      } catch (const c10::Error& e) {
        expect_error_mentions(e, kind.fragment, "tensor leaf 2");
      }
    }
  }
}

// Whole copies on a GPU: CPU leaves to it, GPU leaves back to the host and to the same GPU (a
// leaf already on the target is refused too, as on the CPU); then a good copy works and no
// pinned staging is left held (the fixture checks).
TEST_F(GpuTest, UnsupportedInputsFailCopiesToAndFromTheGpu) {
  for (const Unsupported& kind : unsupported_kinds()) {
    SCOPED_TRACE(kind.name);
    expect_copy_fails(structure_around(kind.make(kCpu), kCpu), kCuda0, kind.fragment);
    if (!kind.on_cuda) continue;
    const c10::IValue on_gpu = structure_around(kind.make(kCuda0), kCuda0);
    expect_copy_fails(on_gpu, kCpu, kind.fragment);
    expect_copy_fails(on_gpu, kCuda0, kind.fragment);
  }
  const c10::IValue good = structure_around(dense(kCpu), kCpu);
  expect_structure_copy(start_copy(good, kCuda0).get(), good, kCuda0);
}

}  // namespace
