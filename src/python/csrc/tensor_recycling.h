// Tensor objects of dropped results, given to the next result's new tensors instead of new ones.
//
// Why: back to back, the thread that calls get() pays for two things per new tensor besides the
// engine's copy: torch's teardown of a dropped result's tensor object (~0.2 us on the GPU
// hosts) and the making of the new result's object (~0.1 us). The deferred release
// (deferred_release.h) moved the first into get()'s wait, but that wait is shorter than the
// teardown of 528 tensors. A tensor object that nothing but the module can reach (only the
// module references it, no weak reference, no attribute, no autograd state, its TensorImpl held
// by nothing else) cannot be told apart from a new one once it takes on the new tensor's storage,
// sizes, strides, offset and keys (what `t.data = new` does in torch,
// TensorImpl::shallow_copy_from) with its version counter back at 0.
//
// Where the work goes: whatever can be done before the engine's outputs exist is done when an
// object becomes a spare, inside the wait (its storage let go of, its counter reset). The build,
// which the caller waits for, only copies the new tensor's metadata into the spare; the engine's
// TensorImpl of that tensor is kept (a husk) and dies in the next get()'s wait, not in the build:
// a first version that swapped the two tensors' counters and let the husk die at once made the
// build 2.5x as long on the GPU host (2026-11-27).
//
// What a program can see: nothing, unless it reaches an unreachable object through the garbage
// collector (gc.get_objects()) and keeps it; such an object is no longer recycled (it then has a
// second reference), unless only an attribute was set through it in the short time between a
// get()'s start and its build. Object ids repeat, as they do for freed objects. The GIL guards
// everything here.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/python_headers.h>

#include <cstddef>
#include <vector>

namespace mtc::python {

// Whether `object`, of which the caller owns the only reference, is a plain tensor that nothing
// else can reach or hold, so it may take on another tensor. May attach an empty attribute dict
// to the object (how its attributes are read portably).
bool unreachable_tensor(PyObject* object);

// The objects a get() may recycle, in the order of the results they came from (the new result's
// tensors usually come in the same order, so the next spare is usually one that fits).
class SpareTensors {
 public:
  SpareTensors() = default;
  SpareTensors(const SpareTensors&) = delete;  // owns references
  SpareTensors& operator=(const SpareTensors&) = delete;
  ~SpareTensors() { release(); }

  // Takes over the caller's reference to an object unreachable_tensor() accepted. Lets go of its
  // storage at once (the tensor becomes an empty one on its device: the memory goes back when it
  // would without recycling) and sets its version counter back to 0 (a new one if another tensor
  // shares it: a detached one).
  void add(PyObject* object);
  // The next spare object, now holding `fresh`'s tensor (its reference goes to the caller; `fresh`
  // is moved into the husks), or nullptr when none is left or the next one's keys differ from
  // `fresh`'s (it waits for a tensor that fits). A spare reached meanwhile is set aside for
  // release(): dropping it may run Python code (its storage's deleter may drop a numpy array),
  // never while a get() holds its lock.
  PyObject* take_for(at::Tensor& fresh);
  // Releases the spares not taken; returns how many references that dropped. With the GIL and
  // no lock held.
  size_t release();
  // Destroys the husks (no Python object is involved); returns how many.
  size_t drop_husks();

  size_t size() const { return objects_.size() - next_ + set_aside_.size(); }
  size_t husks() const { return husks_.size(); }

 private:
  std::vector<PyObject*> objects_;  // owned references from next_ on
  size_t next_ = 0;
  std::vector<PyObject*> set_aside_;  // owned references
  std::vector<at::Tensor> husks_;     // the engine's tensors whose metadata spares took on
  // Asks for the lines of the spares a few ahead of next_ (see take_for).
  void ask_ahead() const;
};

}  // namespace mtc::python
