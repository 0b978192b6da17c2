"""The deferred release of dropped results' tensors: its setting from the environment, and its end.

Dropping a result of many small tensors costs about 0.2 us per tensor in torch's teardown of the
tensor objects, and a training loop drops its previous batch right where it copies the next one.
So the module keeps one reference to each new tensor of the last two results (results of 16 or
more new tensors and at most 16 MiB): when the program drops a result, its tensors die inside a
later ``get()``, while the engine's workers make that copy's outputs and the caller would only
wait. Until then their memory stays allocated and weak references to them do not fire.
``mtc.release_deferred()`` releases them at once; ``MTC_DEFER_RELEASE=0`` in the environment, or
``mtc.set_deferred_release(False)``, turns it off.

Better still, a dropped tensor need not die at all. When a copy to a GPU starts, the tensor objects
of dropped results that nothing else references (a ``torch.Tensor`` exactly, without hooks, weak
references or attributes of its own, never asked for a gradient, no view of it alive) are offered
to the engine, which makes the packed outputs in them: pointed at the new data, with the new
sizes, version 0. Such an output is the same Python object as a tensor of an earlier result,
which the program can no longer reach. ``mtc.set_output_reuse(False)`` turns this off.
"""

import atexit
import os

from . import _C

ENVIRONMENT_VARIABLE = "MTC_DEFER_RELEASE"


def setting_from_environment(environ=os.environ):
    """MTC_DEFER_RELEASE as a bool (on when unset or empty); ValueError naming it for any value
    other than 0 or 1."""
    value = environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if value == "":
        return True
    if value in ("0", "1"):
        return value == "1"
    raise ValueError(f"{ENVIRONMENT_VARIABLE} must be 0 or 1, not {environ[ENVIRONMENT_VARIABLE]!r}")


set_deferred_release = _C.set_deferred_release
set_output_reuse = _C.set_output_reuse
release_deferred = _C.release_deferred
deferred_release_stats = _C.deferred_release_stats

set_deferred_release(setting_from_environment())
# The kept tensors die while the interpreter and torch still work; the module's own store is
# never destroyed, so nothing touches them afterwards.
atexit.register(release_deferred)
