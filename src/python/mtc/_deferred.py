"""The deferred release of dropped results' tensors: its setting from the environment, and its end.

Dropping a result of many small tensors costs about 0.2 us per tensor in torch's teardown of the
tensor objects, and a training loop drops its previous batch right where it copies the next one.
So the module keeps one reference to each new tensor of the last two results (results of 16 or
more new tensors and at most 16 MiB): when the program drops a result, its tensors die inside a
later ``get()``, while the engine's workers make that copy's outputs and the caller would only
wait. Until then their memory stays allocated and weak references to them do not fire.
``mtc.release_deferred()`` releases them at once; ``MTC_DEFER_RELEASE=0`` in the environment, or
``mtc.set_deferred_release(False)``, turns it off.

A dropped tensor that nothing but the module can reach (no other reference, no weak reference, no
attribute, no autograd state) is not released but recycled: the next ``get()`` gives its object
to one of the new result's tensors (its storage, shape, strides and version counter), which
spares torch's teardown of one tensor object and the making of another. ``MTC_RECYCLE_TENSORS=0``
or ``mtc.set_tensor_recycling(False)`` turns that off.
"""

import atexit
import os

from mtc import _C

ENVIRONMENT_VARIABLE = "MTC_DEFER_RELEASE"
RECYCLING_VARIABLE = "MTC_RECYCLE_TENSORS"


def setting_from_environment(environ=os.environ, name=ENVIRONMENT_VARIABLE):
    """The variable `name` as a bool (on when unset or empty); ValueError naming it for any value
    other than 0 or 1."""
    value = environ.get(name, "").strip()
    if value == "":
        return True
    if value in ("0", "1"):
        return value == "1"
    raise ValueError(f"{name} must be 0 or 1, not {environ[name]!r}")


set_deferred_release = _C.set_deferred_release
set_tensor_recycling = _C.set_tensor_recycling
release_deferred = _C.release_deferred
deferred_release_stats = _C.deferred_release_stats

set_deferred_release(setting_from_environment())
set_tensor_recycling(setting_from_environment(name=RECYCLING_VARIABLE))
# The kept tensors die while the interpreter and torch still work; the module's own store is
# never destroyed, so nothing touches them afterwards.
atexit.register(release_deferred)
