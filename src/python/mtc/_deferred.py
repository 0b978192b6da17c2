"""The deferred release of results' tensors: its setting from the environment, and its end.

Dropping a result of many small tensors costs ~0.2 us per tensor in torch's teardown of the
tensor objects. The module keeps one reference to new tensors of a result (results of 16 or
more new tensors and at most 16 MiB, the last two such results), so that when the program drops
the result, those tensors die later: inside a later ``get()``, while the engine's workers make
that copy's outputs and the caller would only wait. How many it keeps follows how many the last
``get()`` released so (at least 16). Until then their memory stays allocated and weak
references to them do not fire. ``mtc.release_deferred()`` releases them at once;
``MTC_DEFER_RELEASE=0`` in the environment, or ``mtc.set_deferred_release(False)``, turns it off.
"""

import atexit
import os

from mtc import _C

ENVIRONMENT_VARIABLE = "MTC_DEFER_RELEASE"


def setting_from_environment(environ=os.environ):
    """MTC_DEFER_RELEASE as a bool (on when unset); ValueError naming it for any other value
    than 0 or 1."""
    value = environ.get(ENVIRONMENT_VARIABLE)
    if value is None:
        return True
    if value.strip() in ("0", "1"):
        return value.strip() == "1"
    raise ValueError(f"{ENVIRONMENT_VARIABLE} must be 0 or 1, not {value!r}")


_C.set_deferred_release(setting_from_environment())
# The kept tensors are released while the interpreter and torch still work; the module's own
# store is never destroyed, so nothing touches them afterwards.
atexit.register(_C.release_deferred)
