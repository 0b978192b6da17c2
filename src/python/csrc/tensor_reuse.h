// Tensor objects of dropped results, reused as the Python objects of later results' new tensors.
//
// Why: on the GPU host, releasing the reference batch's 528 tensor objects took ~160 us of a
// ~350 us call from Python, and wrapping 528 new ones was most of its ~80 us build
// (results/h200/bench_python.md, 2026-11-29): ~0.3 us per tensor in torch's teardown and making
// of the Python object, against ~0.03 us for the engine's own part of an output. A tensor object
// that only the module still references cannot be seen by the program any more. Giving it the
// next output's storage, sizes, strides, dtype and version counter makes it indistinguishable
// from a new object of that output (torch itself moves a tensor's metadata this way for
// `t.data = x`), at a fraction of the cost, and it never reaches Python's allocator or its
// garbage collector's young generation.
//
// Which objects are kept as spares, when the deferred release lets go of a result
// (deferred_release.h): those whose only reference is the module's, of type torch.Tensor exactly,
// with no weak reference, no instance attribute, no hook, no autograd metadata (never asked for
// a gradient), metadata changes allowed, no names and no symbolic sizes. Everything else is
// released as before. A spare's storage is swapped for an empty one of its device at once, so
// its memory goes back where the release would have given it back.
//
// Which outputs take a spare: a new tensor (no Python object yet) that nothing but the result
// references, when a spare of the same TensorImpl class and dispatch keys (device type, autograd
// and inference keys, conjugate and negative bits) is kept. The spare keeps a version counter of
// its own, set back to 0 (or new, if an alias shared it) when it became a spare.
//
// Where the time goes: a spare is made in the release before a copy's wait, where the caller
// would wait for the engine anyway. The output's TensorImpl, whose metadata the spare copied, is
// dropped only in the next such release (drop_finished), not in the build after the wait: with
// the outputs destroyed and the counters exchanged in the build, the build of the reference
// batch took 3x as long on the GPU host (results/NOTES.md, 2026-11-29).
//
// At most kMaxSpares objects are kept; the GIL guards everything here.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/Storage.h>
#include <torch/csrc/python_headers.h>

#include <cstddef>
#include <cstdint>
#include <typeinfo>
#include <utility>
#include <vector>

#include "deferred_release.h"

namespace mtc::python {

class SpareTensors {
 public:
  // ~300 B each (the object, its TensorImpl, a counter): a few MB at most, about 15 reference
  // batches' worth.
  static constexpr size_t kMaxSpares = 8192;

  // The process's one instance. Never destroyed, as DeferredRelease's (a Py_DECREF after the
  // interpreter has finalized would crash): mtc/_deferred.py releases the spares at exit.
  static SpareTensors& instance();

  bool enabled() const { return enabled_; }
  // Off releases the spares. Returns the previous setting.
  bool set_enabled(bool enabled);

  // Takes over `object`, a reference the caller owns, as a spare when it qualifies (above) and
  // reuse is on; false leaves the reference with the caller.
  bool offer(PyObject* object);
  // A spare holding `output`'s tensor, as a new reference, or nullptr when none fits (then
  // `output` is untouched). `output` is reset when a spare took it.
  PyObject* reuse(at::Tensor& output);
  // Drops the outputs whose metadata spares took (kept until now: see the top).
  void drop_finished();
  size_t finished() const { return finished_.size(); }
  // Releases every spare and drops the finished outputs; returns how many spares.
  size_t release_all();

  size_t spares() const { return count_; }
  int64_t reused() const { return reused_; }  // outputs given a spare since the process began

 private:
  SpareTensors() = default;
  struct Bucket {  // spares of one TensorImpl class and key set
    const std::type_info* impl_type;
    c10::DispatchKeySet keys;
    std::vector<PyObject*> objects;  // owned references
  };
  static bool qualifies(PyObject* object);
  Bucket* bucket_for(const std::type_info& impl_type, c10::DispatchKeySet keys);
  const c10::Storage& empty_storage(c10::Device device);

  bool enabled_ = true;
  size_t count_ = 0;
  int64_t reused_ = 0;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<c10::Device, c10::Storage>> empty_storages_;
  std::vector<at::Tensor> finished_;
};

// The Python object of an output tensor, as a new reference: its own when it has one (a tensor
// already on the target comes back as its input's object); else a spare, when one fits, or a new
// object, either noted in `created`. Throws pybind11::error_already_set when Python fails.
PyObject* wrap_output(at::Tensor tensor, NewTensors& created);

}  // namespace mtc::python
