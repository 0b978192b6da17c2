"""Helpers shared by the mtc tests: comparing structures, running threads, and watching the GIL."""

import collections
import contextlib
import os
import subprocess
import sys
import threading
import time

import torch
import torch.utils._pytree


def _cuda_reason():
    if torch.cuda.is_available():
        return ""
    return "no CUDA device: torch.cuda.is_available() is False on this machine"


def gpu_mark():
    """pytest marks for a test that needs a CUDA device: the gpu marker and a visible skip."""
    import pytest

    return [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason=_cuda_reason())]


@contextlib.contextmanager
def streamed_walk(enabled):
    """mtc's streamed walk (mtc._C._set_streamed_walk) set to `enabled` for the block, then put back
    as it was."""
    import mtc

    previous = mtc._C._set_streamed_walk(enabled)
    try:
        yield
    finally:
        mtc._C._set_streamed_walk(previous)


def run_python(code, **env):
    """`code` run by a child interpreter with `env` added to the environment, within 60 s (a hang
    fails the test instead of stopping the suite)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **env))


def printed_by(code):
    """The words a child interpreter running `code` printed; it must exit 0."""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def errors_in_threads(body, count):
    """Runs body(k) for k in range(count), each in a thread of its own, and returns what they
    raised (a failed assertion in a thread would otherwise only be printed)."""
    errors = []

    def run(k):
        try:
            body(k)
        except BaseException as error:  # noqa: B902  (handed to the test's thread)
            errors.append(error)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def leaf_that_runs(action):
    """An opaque leaf whose inspection by the walk calls action(): the walk asks a tuple
    subclass's class for _fields (is it a named tuple?), which a metaclass can answer with code."""

    class Meta(type):
        @property
        def _fields(cls):
            action()
            return ("a",)

    class Leaf(tuple, metaclass=Meta):
        pass

    return Leaf()


def assert_copied(out, ref, device):
    """`out` has ref's containers (same types, order, keys, named tuple class, default_factory and
    maxlen), tensors equal to ref's on `device`, and every other leaf the very object of ref."""
    if type(ref) in (list, tuple, collections.deque) or is_named_tuple(ref):
        assert type(out) is type(ref)
        assert out is not ref or ref == ()  # the empty tuple is a singleton
        assert len(out) == len(ref)
        if type(ref) is collections.deque:
            assert out.maxlen == ref.maxlen
        for o, r in zip(out, ref):
            assert_copied(o, r, device)
    elif type(ref) in (dict, collections.OrderedDict, collections.defaultdict):
        assert type(out) is type(ref) and out is not ref
        if type(ref) is collections.defaultdict:
            assert out.default_factory is ref.default_factory
        assert list(out.keys()) == list(ref.keys())
        for ko, kr in zip(out.keys(), ref.keys()):
            assert ko is kr
        for key in ref:
            assert_copied(out[key], ref[key], device)
    elif isinstance(ref, torch.Tensor):
        assert isinstance(out, torch.Tensor)
        assert out.device == torch.device(device)
        assert out.dtype == ref.dtype and out.shape == ref.shape
        assert torch.equal(out.cpu(), ref.cpu())
    else:
        assert out is ref


def is_named_tuple(value):
    return torch.utils._pytree.is_namedtuple_class(type(value))


class ProgressWatcher:
    """A Python thread that records the time of each step of a busy loop: if another thread holds
    the GIL, no step happens until it lets go."""

    def __init__(self):
        self.times = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.times.append(time.perf_counter())
            for _ in range(200):
                pass

    def __enter__(self):
        self._old_interval = sys.getswitchinterval()
        # Short slices: a thread that keeps the GIL lets the watcher run for at most 1 ms at
        # the edges of the watched call.
        sys.setswitchinterval(0.001)
        self._thread.start()
        while not self.times:
            time.sleep(0.001)
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        sys.setswitchinterval(self._old_interval)

    def coverage(self, start, end, bins=20):
        """The fraction of `bins` equal slices of (start, end) in which the watcher made a step.
        A call that keeps the GIL throughout leaves it at most a slice at either edge."""
        width = (end - start) / bins
        hit = {int((t - start) / width) for t in self.times if start <= t < end}
        return len(hit) / bins
