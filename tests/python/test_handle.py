"""The handle's lifetime, the GIL, and many threads copying at once (CPU target)."""

import gc
import threading
import time
import weakref

import pytest
import torch

import mtc
from support import ProgressWatcher, assert_copied, errors_in_threads, printed_by, streamed_walk

# Enough leaves that the engine's walk of them takes tens of milliseconds on a CPU.
LONG_COPY_LEAVES = 500_000


def long_structure():
    # One tensor many times: cheap to build, as long to walk as many tensors.
    return [torch.ones(2)] * LONG_COPY_LEAVES


def test_get_returns_the_same_object_every_time():
    handle = mtc.start_copy({"a": [torch.ones(2)]}, "cpu")
    first = handle.get()
    assert handle.get() is first
    assert handle.ready()


def test_ready_turns_true_without_get():
    handle = mtc.start_copy([torch.ones(2)] * 100, "cpu")
    deadline = time.monotonic() + 30
    while not handle.ready():
        assert time.monotonic() < deadline, "the copy never completed"
        time.sleep(0.001)
    assert len(handle.get()) == 100


def test_stats_before_the_copy_has_completed():
    handle = mtc.start_copy(long_structure(), "cpu")
    if handle.ready():
        pytest.skip("the copy completed before stats() could be called early")
    with pytest.raises(ValueError, match="stats\\(\\) is known once"):
        handle.stats()
    handle.get()
    stats = handle.stats()
    assert stats["tensors"] == LONG_COPY_LEAVES and stats["reused"] == LONG_COPY_LEAVES


def test_stats_give_the_module_own_parts():
    handle = mtc.start_copy(long_structure(), "cpu")
    handle.get()
    parts = handle.stats()["module"]
    assert set(parts) == {"walk_us", "engine_start_us", "result_wait_us", "build_us", "complete_wait_us",
                          "release_us", "released_tensors"}
    assert all(us >= 0 for us in parts.values())
    # Half a million leaves take more than a microsecond to walk and to put back together.
    assert parts["walk_us"] > 1 and parts["build_us"] > 1


def test_the_input_may_be_dropped_once_start_copy_returned():
    data = {"k": [torch.arange(3), "s"], "n": 1}
    expected = {"k": [torch.arange(3), "s"], "n": 1}
    handle = mtc.start_copy(data, "cpu")
    del data
    gc.collect()
    out = handle.get()
    assert torch.equal(out["k"][0], expected["k"][0]) and out["k"][1] == "s" and out["n"] == 1


def test_the_handle_releases_what_it_holds():
    class Leaf:
        pass

    leaf = Leaf()
    watch = weakref.ref(leaf)
    handle = mtc.start_copy([leaf, torch.ones(1)], "cpu")
    del leaf
    assert watch() is not None  # the handle holds the opaque leaf for the result
    out = handle.get()
    del handle
    assert watch() is out[0]
    del out
    gc.collect()
    assert watch() is None


def test_the_watcher_sees_a_call_that_keeps_the_gil():
    # The check of the GIL tests below: a call that keeps the GIL leaves the watcher the edges.
    # Long enough (~0.2-0.5 s) that an edge, a switch interval or a slice the operating system
    # took from the watcher while it held the GIL (on a loaded machine), stays within one bin.
    with ProgressWatcher() as watcher:
        start = time.perf_counter()
        sum(range(20_000_000))
        end = time.perf_counter()
    assert watcher.coverage(start, end) <= 0.15


@pytest.fixture
def walked_whole():
    """The structure walked whole before the engine starts: the engine's walk then comes after the
    module's, and get() has tens of milliseconds to wait without the GIL. Streamed, the engine's
    walk can keep up with the module's and leave get() little to wait for (its build keeps the
    GIL), which is no sign of a wait that kept it. Both walks reach the same wait in get() and
    the same drop of a handle; these tests check them on the whole walk's path."""
    with streamed_walk(False):
        yield


def test_get_lets_other_threads_run_while_it_waits(walked_whole):
    data = long_structure()
    with ProgressWatcher() as watcher:
        handle = mtc.start_copy(data, "cpu")
        start = time.perf_counter()
        out = handle.get()
        end = time.perf_counter()
    assert len(out) == LONG_COPY_LEAVES
    assert watcher.coverage(start, end) >= 0.3, f"get() took {(end - start) * 1e3:.0f} ms"


def test_dropping_an_unfinished_handle_waits_and_lets_other_threads_run(walked_whole):
    data = long_structure()
    with ProgressWatcher() as watcher:
        handle = mtc.start_copy(data, "cpu")
        if handle.ready():
            pytest.skip("the copy completed before its handle could be dropped")
        start = time.perf_counter()
        del handle
        end = time.perf_counter()
    assert watcher.coverage(start, end) >= 0.3, f"dropping the handle took {(end - start) * 1e3:.0f} ms"


def test_start_copy_without_the_background_thread_lets_other_threads_run():
    data = long_structure()
    with ProgressWatcher() as watcher:
        start = time.perf_counter()
        handle = mtc.start_copy(data, "cpu", use_background_thread=False)
        end = time.perf_counter()
    assert len(handle.get()) == LONG_COPY_LEAVES
    # The walk of the Python structure keeps the GIL; the engine's work does not.
    assert watcher.coverage(start, end) >= 0.2, f"start_copy took {(end - start) * 1e3:.0f} ms"


def test_many_threads_copying_at_once():
    def worker(seed):
        for i in range(40):
            data = {
                "id": (seed, i),
                "t": [torch.full((i % 5 + 1,), seed * 1000 + i) for _ in range(20)],
                "nested": ({"x": torch.arange(seed + i)}, [seed, None]),
            }
            handle = mtc.start_copy(data, "cpu", use_background_thread=(i % 2 == 0))
            assert_copied(handle.get(), data, "cpu")

    errors = errors_in_threads(worker, 8)
    assert not errors, errors[0]


def test_many_threads_waiting_on_one_handle():
    handle = mtc.start_copy(long_structure(), "cpu")
    results = []
    threads = [threading.Thread(target=lambda: results.append(handle.get())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and all(r is results[0] for r in results)


def test_get_called_by_code_that_its_own_build_runs_raises_instead_of_hanging():
    # A named tuple whose constructor calls get() on the handle whose result is being built: the
    # build holds the handle's lock, so that get() would wait for itself. In a child, so that a hang
    # fails.
    code = (
        "import collections, torch, mtc\n"
        "armed = False\n"
        "class Pair(collections.namedtuple('Pair', 'a b')):\n"
        "    def __new__(cls, a, b):\n"
        "        if armed:\n"
        "            handle.get()\n"
        "        return super().__new__(cls, a, b)\n"
        "handle = mtc.start_copy(Pair(torch.zeros(2), torch.ones(2)), 'cpu')\n"
        "armed = True\n"
        "try:\n"
        "    handle.get()\n"
        "except RuntimeError as error:\n"
        "    print('raised', 'being built' in str(error))\n"
    )
    assert printed_by(code) == ["raised", "True"]
