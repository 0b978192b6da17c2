"""Types and documentation of mtc._C, the binding of the mtc copier engine."""

from typing import Any, Dict, Union

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

    def options(self) -> Dict[str, Union[str, bool, int]]:
        """The target (``device``, as a str) and the options this copy was given, after
        coercion: what reached the engine."""

    def stats(self) -> Dict[str, Any]:
        """What the copy did, known once ``ready()`` is true or ``get()`` returned.

        Keys: ``tensors``, ``bytes``, ``reused`` (already on the target, returned as they
        are), ``packed``, ``chunks``, ``per_tensor``, ``pinned_bytes``, ``walk_threads``, and
        the engine's timings in microseconds: ``queued_us``, ``traverse_us``, ``submit_us``,
        ``outputs_us``; and ``module``, a dict of the module's own parts in microseconds:
        ``walk_us`` (the Python structure taken apart), ``engine_start_us``, and in ``get()``
        ``result_wait_us`` (for the engine's outputs), ``build_us`` (the Python result) and
        ``complete_wait_us`` (for the device), and ``released_tensors`` and ``release_us``:
        earlier results' tensors released meanwhile (see :func:`release_deferred`), and
        ``released_to_keep``: those released at once after the build, to keep within bounds. Raises
        ``ValueError`` before the copy has completed.
        """

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

def release_deferred() -> int:
    """Releases now the tensors of dropped results that the module kept, so that a later
    ``get()`` would release them while the engine's workers make its outputs; returns how many
    tensor objects it let go of.

    The module keeps one reference to new tensors of a result of at least 16 new tensors and at
    most 16 MiB, for the last two such results: as many as the last ``get()`` could release while
    it waited (at least 16, twice as many when it ran out). After ``del result`` their memory
    stays allocated, and weak references to them do not fire, until then. Called at interpreter
    exit.
    """

def set_deferred_release(enabled: bool) -> bool:
    """Turns the deferred release on (the default; ``MTC_DEFER_RELEASE=0`` in the environment
    starts with it off) or off, which releases what is kept. Returns the previous setting."""

def deferred_release_stats() -> Dict[str, Union[bool, int]]:
    """What the module keeps now: ``enabled``, ``tensors`` (objects kept), ``bytes`` (of the
    results they belong to) and ``budget`` (how many tensors of the next result it would keep:
    learned from how many the last ``get()`` released while it waited)."""
