"""The methods scripts/bench_python.py times: per-tensor .to() (with and without non_blocking),
the mtc variants (MTC_SETTINGS), the original package and a baseline build of mtc, each a
function of (data, phases) that returns the copied batch; and Phases, where the timed calls of a
start_copy method went."""

import statistics
import time

import torch


def per_tensor(data, device, non_blocking):
    if type(data) is list:
        return [per_tensor(x, device, non_blocking) for x in data]
    if type(data) is tuple:
        return tuple(per_tensor(x, device, non_blocking) for x in data)
    if type(data) is dict:
        return {k: per_tensor(v, device, non_blocking) for k, v in data.items()}
    if isinstance(data, torch.Tensor):
        return data.to(device, non_blocking=non_blocking)
    return data


ORIGINAL_MODULE = "accvlab.multi_tensor_copier"


class OriginalMissing(Exception):
    """--original, but the original package cannot be used here."""


def import_original():
    """The original package's module, or OriginalMissing saying why not and what to do."""
    import importlib

    try:
        module = importlib.import_module(ORIGINAL_MODULE)
    except ImportError as error:
        raise OriginalMissing(
            f"--original: cannot import {ORIGINAL_MODULE} ({error}); install the original package "
            "from its source into this Python environment first (docs/python.md, \"Timing the "
            "original package\")") from error
    if not callable(getattr(module, "start_copy", None)):
        raise OriginalMissing(f"--original: {ORIGINAL_MODULE} has no start_copy(); this script calls "
                              "start_copy(data, device).get()")
    return module


class BaselineMissing(Exception):
    """--baseline NAME, but NAME cannot be used as a build of mtc here."""


def import_baseline(name):
    """The package NAME, a build of mtc from another tree installed under that name
    (scripts/install_module_as.py), or BaselineMissing saying why not and what to do."""
    import importlib

    try:
        module = importlib.import_module(name)
    except ImportError as error:
        raise BaselineMissing(
            f"--baseline {name}: cannot import it ({error}); install another tree's module under that "
            "name first (scripts/install_module_as.py SRC OUT NAME) and put OUT on PYTHONPATH") from error
    # What timed_start_copy and apply_settings call.
    extension = getattr(module, "_C", None)
    missing = [attr for attr in ("start_copy", "set_deferred_release", "set_output_reuse")
               if not callable(getattr(module, attr, None))]
    missing += [f"_C.{attr}" for attr in ("_set_streamed_walk", "_set_walk_split")
                if not callable(getattr(extension, attr, None))]
    if missing:
        raise BaselineMissing(f"--baseline {name}: not a build of mtc (it lacks {', '.join(missing)})")
    import mtc

    if extension is mtc._C:
        raise BaselineMissing(f"--baseline {name}: it imports mtc's own extension, so it would time mtc "
                              "against itself (a tree from before 2026-12-06, whose package imports mtc._C by "
                              "that name)")
    return module


class Phases:
    """Where the timed calls of a start_copy method went, call by call (ns): start_copy's return,
    get(), the handle's drop (when the call returns it), the device synchronize that closes each
    call, and the rest of the call's time in the loop: the previous output's drop and the loop's
    own Python. Taken in the timed calls themselves, unlike mtc_parts' untimed ones: call by call
    they add up to the call's time, `rest` being what the others leave (the five clock reads
    inside a call add ~0.3 us to it). Their medians need not add up to the call's median.
    `without_synchronize` is the call less its closing synchronize, call by call: get() returns
    only once the data is on the target, so that is where the engine's own benchmarks end a copy
    (BM_EngineCopy), and the synchronize after a step's gap costs ~40-55 us even with nothing to
    wait for (the yardstick): the module's step set beside the engine's, like for like."""

    NAMES = ("start_copy", "get", "drop_handle", "synchronize", "rest")

    def __init__(self):
        self.ns = {name: [] for name in (*self.NAMES, "without_synchronize")}

    def add_call(self, start, get, drop):
        for name, value in zip(self.NAMES, (start, get, drop)):
            self.ns[name].append(value)

    def close_call(self, total, synchronize):
        """The call that took `total` ns in the loop, `synchronize` of them in the closing
        synchronize: what its parts leave of it."""
        if len(self.ns["rest"]) < len(self.ns["start_copy"]):
            self.ns["synchronize"].append(synchronize)
            self.ns["rest"].append(total - sum(self.ns[name][-1] for name in self.NAMES[:4]))
            self.ns["without_synchronize"].append(total - synchronize)

    def medians_s(self):
        return {name: statistics.median(v) * 1e-9 for name, v in self.ns.items() if v} or None


def timed_start_copy(module, device, settings=None):
    """`module`.start_copy(data, device).get(), timing its phases (Phases); for mtc, with its
    deferred release of dropped results, its reuse of their tensor objects and its streamed walk set as `settings`
    (MTC_SETTINGS) say before each call (flags: ~0.1 us each)."""
    def start_copy(data, phases):
        if settings is not None:
            apply_settings(module, settings)
        t0 = time.perf_counter_ns()
        handle = module.start_copy(data, device)
        t1 = time.perf_counter_ns()
        out = handle.get()
        t2 = time.perf_counter_ns()
        del handle
        if phases is not None:
            phases.add_call(t1 - t0, t2 - t1, time.perf_counter_ns() - t2)
        return out

    return start_copy


# The mtc methods' settings: (deferred release of dropped results, reuse of their tensor objects,
# streamed walk, the engine's leaves per walking thread). mtc_nodefer releases the dropped results'
# tensors where the program drops them, which leaves nothing to reuse; mtc_wide splits the engine's
# walk at one thread per 40 leaves instead of 128 (at most as many threads as the pool has:
# MTC_WORKER_THREADS), mtc_narrow at one per 256 (fewer chunks, so fewer DMAs to queue after the
# last element);
# mtc_again is mtc itself a second time: an A/A pair says how far two methods that are the same
# come apart.
MTC_SETTINGS = {"mtc": (True, True, True, 128), "mtc_nodefer": (False, False, True, 128),
                "mtc_noreuse": (True, False, True, 128), "mtc_nostream": (True, True, False, 128),
                "mtc_wide": (True, True, True, 40), "mtc_narrow": (True, True, True, 256),
                "mtc_again": (True, True, True, 128)}


def apply_settings(module, settings):
    module.set_deferred_release(settings[0])
    module.set_output_reuse(settings[1])
    module._C._set_streamed_walk(settings[2])
    module._C._set_walk_split(256, settings[3])


def methods(device, original=None, baseline=None):
    import mtc

    available = {
        "to": lambda data, phases: per_tensor(data, device, False),
        "to_nb": lambda data, phases: per_tensor(data, device, True),
        **{name: timed_start_copy(mtc, device, settings) for name, settings in MTC_SETTINGS.items()},
    }
    if original is not None:
        available["original"] = timed_start_copy(original, device)
    if baseline is not None:
        # With mtc's own settings, set before each call as mtc's are.
        available["baseline"] = timed_start_copy(baseline, device, MTC_SETTINGS["mtc"])
    return available
