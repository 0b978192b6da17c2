"""Copies of nested structures of many small tensors between devices, in one call.

    handle = mtc.start_copy(batch, "cuda")  # returns at once; the copy runs on worker threads
    batch_on_gpu = handle.get()             # waits (without the GIL) until the data is there

``start_copy`` takes the containers ``torch.utils._pytree`` knows (list, tuple, dict, named
tuples, OrderedDict, defaultdict, deque) nested to any depth, with tensors and numpy arrays as
leaves; every other object comes back as it is. See ``help(mtc.start_copy)``.

A dropped result's tensors die inside a later ``get()`` rather than where the program drops them
(``mtc._deferred`` says why and when; ``release_deferred()`` and ``set_deferred_release()``);
the objects of such tensors may come back as the tensors of a later copy (``set_output_reuse()``).
"""

# torch first: it loads libtorch and torch's Python bindings, which mtc._C is linked against.
import torch  # noqa: F401

# Relative: a build of the package copied under another name (a baseline for an A/B in one process,
# scripts/install_module_as.py) must import its own extension, not this one's.
from ._C import AsyncCopyHandle, __version__
from ._copy import DeviceLike, start_copy
from ._deferred import deferred_release_stats, release_deferred, set_deferred_release, set_output_reuse

__all__ = [
    "AsyncCopyHandle",
    "DeviceLike",
    "deferred_release_stats",
    "release_deferred",
    "set_deferred_release",
    "set_output_reuse",
    "start_copy",
    "__version__",
]
