"""Types and documentation of mtc._C, the binding of the mtc copier engine."""

from typing import Any, Dict, Union

import torch

__version__: str

class AsyncCopyHandle:
    """The pending result of :func:`start_copy`.

    Dropping a handle whose copy has not completed waits for the copy's device work (with the
    GIL released), so no buffer still in flight is freed.
    """

    def ready(self) -> bool:
        """True once every copy has completed. Never blocks.

        Raises the copy's error (``RuntimeError``; ``torch.OutOfMemoryError`` when memory ran
        out) if it failed.
        """

    def get(self) -> Any:
        """Waits until the copy has completed and returns the structure on the target.

        The GIL is released while waiting. Raises the copy's error if it failed, on every
        call: ``RuntimeError`` with the engine's message (a tensor that cannot be copied, such
        as a sparse one or one on a device other than cpu and cuda, is named by its number in
        pre-order: "tensor leaf K of root element E"), ``torch.OutOfMemoryError`` when memory
        ran out. A later call returns the same object.
        """

    def stats(self) -> Dict[str, Union[int, float]]:
        """What the copy did, known once ``ready()`` is true or ``get()`` returned.

        Keys: ``tensors``, ``bytes``, ``reused`` (already on the target, returned as they
        are), ``packed``, ``chunks``, ``per_tensor``, ``pinned_bytes``, ``walk_threads``, and
        the engine's timings in microseconds: ``queued_us``, ``traverse_us``, ``submit_us``,
        ``outputs_us``. Raises ``ValueError`` before the copy has completed.
        """

def start_copy(
    data: Any,
    device: Union[str, torch.device],
    *,
    use_pinned_staging: bool = True,
    pack_cpu_tensors: bool = True,
    min_packed_alignment_bytes: int = 16,
    max_packed_chunk_bytes: int = 32 * 1024 * 1024,
    use_background_thread: bool = True,
) -> AsyncCopyHandle:
    """Starts copying every tensor of ``data`` to ``device`` and returns at once.

    ``data`` is a tensor, a numpy array, or lists, tuples and dicts of them nested to any
    depth. The walk descends only into objects whose type is exactly ``list``, ``tuple`` or
    ``dict``: named tuples, ``OrderedDict`` and other subclasses, dataclasses and custom
    classes are opaque leaves, like strings, numbers and None, and come back as the same
    objects, tensors inside them included (the original package's rule). numpy arrays become
    tensors with ``torch.from_numpy``, without a copy where the memory allows it (an array
    with negative strides is copied to a contiguous one first). The result has new
    containers of the same types, in the same order, with the same dict keys; tensors
    already on ``device`` come back as the same objects.

    The inputs must not be modified until the copy has completed (``ready()`` is true or
    ``get()`` returned). Work queued on the current CUDA streams before the call is ordered
    before the copy.

    Options:
        use_pinned_staging: stage host data through pooled pinned memory.
        pack_cpu_tensors: pack small contiguous tensors (up to 256 KiB) into chunks, one
            allocation and one DMA per chunk.
        min_packed_alignment_bytes: each packed tensor starts at a multiple of this and of
            its element size; must be >= 1.
        max_packed_chunk_bytes: payload limit of one chunk; must be > 0.
        use_background_thread: walk, stage and submit on the engine's worker threads; when
            False, this call does that work itself (with the GIL released) before it returns.

    Raises:
        ValueError: a device that does not exist or cannot be parsed, a CUDA device without
            CUDA, an option out of range, or a leaf that cannot become a tensor (the message
            names its place, as in ``data[0]['boxes']``).
        TypeError: ``device`` is neither a str nor a torch.device.
    """
