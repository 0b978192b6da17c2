"""mtc.start_copy: the public entry point, a Python function so that it has a real signature.

The binding's own function is a builtin without one: inspect.signature() failed on it, and
help(), IDEs and functools.partial saw nothing of its keywords. This wrapper only names the
arguments and passes them on in place; converting and checking them is the binding's work
(one place, in C++: src/python/csrc/arguments.cpp).
"""

from typing import Any, Union

import torch

from . import _C
from ._C import AsyncCopyHandle

# What torch.device() accepts with one argument.
DeviceLike = Union[torch.device, str, bytes, int]


def start_copy(
    data: Any,
    device: DeviceLike,
    *,
    use_pinned_staging: bool = True,
    pack_cpu_tensors: bool = True,
    min_packed_alignment_bytes: int = 16,
    max_packed_chunk_bytes: int = 32 * 1024 * 1024,
    use_background_thread: bool = True,
    pinned_host_outputs: bool = False,
) -> AsyncCopyHandle:
    """Starts copying every tensor of ``data`` to ``device`` and returns at once.

    ``data`` is a tensor, a numpy array, or containers of them nested to any depth: the
    containers ``torch.utils._pytree`` knows (``list``, ``tuple``, ``dict``, named tuples,
    ``collections.OrderedDict``, ``defaultdict`` and ``deque``), each rebuilt as its own type
    (the same named tuple class, default_factory and maxlen), with the same dict keys (the same
    key objects) in the same order. Every other object is an opaque leaf and comes back as the
    same object, tensors inside it untouched: strings, numbers, None, dataclasses, custom
    classes, and subclasses of list, dict or OrderedDict (their constructors may want more than
    their elements; pytree treats them as leaves too). numpy arrays become tensors with
    ``torch.from_numpy``, without a copy where the memory allows it. Tensors already on
    ``device`` come back as the same objects; new tensors are plain tensors without autograd
    history (``requires_grad`` False, also for an ``nn.Parameter`` or a tensor subclass).

    ``device`` is anything ``torch.device()`` accepts: a ``torch.device``, ``"cuda:0"``,
    ``b"cuda"``, or an int index (a CUDA device).

    The inputs must not be modified until the copy has completed (``ready()`` is true or
    ``get()`` returned). Work queued on the current CUDA streams before the call is ordered
    before the copy.

    Options (integers go through ``operator.index``, and a float with an integral value such
    as ``1.5e6`` is that integer; a flag is a bool or the integer 0 or 1):
        use_pinned_staging: stage host data through pooled pinned memory.
        pack_cpu_tensors: pack small contiguous tensors (up to 256 KiB) into chunks, copied
            a chunk (CPU to GPU) or a few chunks (GPU to CPU) at a time.
        min_packed_alignment_bytes: each packed tensor starts at a multiple of this and of
            its element size; from 1 to 1 GiB.
        max_packed_chunk_bytes: payload limit of one chunk; must be > 0.
        use_background_thread: walk, stage and submit on the engine's worker threads; when
            False, this call does that work itself (with the GIL released) before it returns.
        pinned_host_outputs: GPU to CPU: outputs land in pinned (page-locked) memory that
            the DMA writes, with no host copy after it.

    Raises:
        ValueError: a device that does not exist or cannot be parsed, a CUDA device without
            CUDA, an option out of range, or a leaf that cannot become a tensor (the message
            names its place, as in ``data[0]['boxes']``).
        TypeError: ``device`` or an option of a type it cannot be (one line, naming it).
    """
    return _C.start_copy(
        data,
        device,
        use_pinned_staging,
        pack_cpu_tensors,
        min_packed_alignment_bytes,
        max_packed_chunk_bytes,
        use_background_thread,
        pinned_host_outputs,
    )
