"""Types and documentation of mtc._C, the binding of the mtc copier engine."""

from typing import Any, Dict, List, Optional, Sequence, Union, final

__version__: str

@final
class AsyncCopyHandle:
    """The pending result of :func:`start_copy`.

    Dropping a handle whose copy has not completed waits for the copy's device work (with the
    GIL released), so no buffer still in flight is freed. A handle in a reference cycle (an
    opaque leaf or the result referring back to it) is freed by the garbage collector.
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
        pre-order: "tensor leaf K", counted over the whole structure, or "tensor leaf K of root
        element E", counted within that element, where the walk was split among threads),
        ``torch.OutOfMemoryError`` when memory ran out. A later call returns the same object.
        """

    def options(self) -> Dict[str, Union[str, bool, int]]:
        """The target (``device``, as a str) and the options this copy was given, after
        coercion: what reached the engine."""

    def stats(self) -> Dict[str, Any]:
        """What the copy did, known once ``ready()`` is true or ``get()`` returned.

        Keys: ``tensors``, ``bytes``, ``reused`` (already on the target, returned as they
        are), ``packed``, ``chunks``, ``per_tensor``, ``pinned_bytes``, ``walk_threads``,
        ``recycled`` (packed outputs made in a dropped result's tensor objects), and
        the engine's timings in microseconds: ``queued_us``, ``traverse_us``, ``submit_us``,
        ``outputs_us``; for a root walked into the engine element by element, ``feed_sleeps``
        (how often its threads went to wait for an element) and ``feed_tail_us`` (how long its
        walk went on after the last element came), both 0 otherwise; for a walk split among
        threads, ``split_wait_us`` (its own thread waiting for the others to finish) and
        ``split_queue_us`` (that thread queuing every thread's chunks), ``split_join_us``
        (until the last helping thread took its first element), ``split_leaf_ns`` (the threads'
        walking time per tensor leaf) and ``split_stage_us`` (the longest staging after a
        thread's walk), all 0 otherwise;
        ``allocate_us`` and ``driver_us`` (the packed chunks' memory taken, and the CUDA calls
        queuing their device work and the completion events, wherever in the copy they ran); and
        ``module``, a dict of the module's own parts in microseconds: ``walk_us`` (the Python
        structure taken apart), ``engine_start_us``, and in ``get()`` ``result_wait_us`` (for the
        engine's outputs), ``build_us`` (the Python result), ``complete_wait_us`` (for the
        device), ``release_us`` and ``released_tensors`` (earlier results' tensors released by
        the deferred release).
        With an object offered for every tensor leaf, ``build_us`` is the build before the wait
        plus its confirmation after it. Raises ``ValueError`` before the copy has completed.
        """

def set_deferred_release(enabled: bool) -> bool:
    """Turns the deferred release of dropped results' tensors on or off; off releases what is
    kept. Returns the previous setting."""

def set_output_reuse(enabled: bool) -> bool:
    """Turns on or off the reuse of dropped results' tensor objects as the outputs of new copies.
    Returns the previous setting."""

def _set_walk_split(min_leaves: int, leaves_per_part: int) -> None:
    """For benchmarks: the engine's split of a structure among walking threads, process-wide (a
    structure of at least ``min_leaves`` leaves is walked by several threads, one per
    ``leaves_per_part`` leaves at most; defaults 256 and 128)."""

def _set_streamed_walk(enabled: bool) -> bool:
    """For benchmarks and tests: whether a list, tuple or dict root is walked into the engine's
    copy element by element, the engine starting first (on by default), or walked whole first.
    Returns the previous setting."""

def _take_reusable(wanted: Sequence[bool]) -> List[Optional[Any]]:
    """For tests: the tensor objects a copy whose leaf k is ``wanted[k]`` would be offered, by
    position (None where nothing), taken out of what the deferred release keeps."""

def release_deferred() -> int:
    """Releases every kept tensor of earlier results now; returns how many references that was."""

def deferred_release_stats() -> Dict[str, Union[bool, int]]:
    """What the deferred release keeps now: ``enabled``, ``reuse`` (``set_output_reuse``),
    ``results``, ``tensors``, ``bytes``."""

def start_copy(
    data: Any,
    device: Any,
    use_pinned_staging: Any,
    pack_cpu_tensors: Any,
    min_packed_alignment_bytes: Any,
    max_packed_chunk_bytes: Any,
    use_background_thread: Any,
    pinned_host_outputs: Any,
) -> AsyncCopyHandle:
    """The binding behind :func:`mtc.start_copy`, every option in place (no defaults).

    Converts the device and the options as ``mtc.start_copy`` documents and starts the copy;
    the options' ranges and the device's index are the engine's to check.
    """
