"""The deferred release of dropped results' tensors: its setting from the environment, and its end.

Dropping a result of many small tensors costs about 0.2 us per tensor in torch's teardown of the
tensor objects, and a training loop drops its previous batch right where it copies the next one.
So the module keeps one reference to each new tensor of the last two results (results of 16 or
more new tensors and at most 16 MiB): when the program drops a result, its tensors die inside a
later ``get()``, while the engine's workers make that copy's outputs and the caller would only
wait. Until then their memory stays allocated and weak references to them do not fire.
``mtc.release_deferred()`` releases them at once; ``MTC_DEFER_RELEASE=0`` in the environment, or
``mtc.set_deferred_release(False)``, turns it off.

A released tensor object that nothing else references (no other reference, weak reference,
attribute, hook or gradient) is kept as a spare and becomes the Python object of a later result's
new tensor: torch's teardown and making of the object cost ~0.3 us per tensor, its reuse a tenth
of that. ``MTC_REUSE_TENSORS=0`` in the environment, or ``mtc.set_tensor_reuse(False)``, turns
that off; ``deferred_release_stats()`` counts the spares and the reuses.
"""

import atexit
import os

from mtc import _C

ENVIRONMENT_VARIABLE = "MTC_DEFER_RELEASE"
REUSE_VARIABLE = "MTC_REUSE_TENSORS"


def setting_from_environment(environ=os.environ, variable=ENVIRONMENT_VARIABLE):
    """`variable` as a bool (on when unset or empty); ValueError naming it for any value other
    than 0 or 1."""
    value = environ.get(variable, "").strip()
    if value == "":
        return True
    if value in ("0", "1"):
        return value == "1"
    raise ValueError(f"{variable} must be 0 or 1, not {environ[variable]!r}")


set_deferred_release = _C.set_deferred_release
set_tensor_reuse = _C.set_tensor_reuse
release_deferred = _C.release_deferred
deferred_release_stats = _C.deferred_release_stats

set_deferred_release(setting_from_environment())
set_tensor_reuse(setting_from_environment(variable=REUSE_VARIABLE))
# The kept tensors and the spares die while the interpreter and torch still work; the module's own store is
# never destroyed, so nothing touches them afterwards.
atexit.register(release_deferred)
