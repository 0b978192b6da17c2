"""Confining a whole process, every thread of it, to a few CPUs: for an A/B of two builds in one
process. Each CPU of the GPU hosts switches between a fast and a slow state within seconds, on
its own (docs/gpu-host.md): two builds whose worker threads run on different CPUs then see
different hosts, and their ratio drifts with the CPUs' states. Confined together to CPUs drawn
anew for each run, both builds' threads share those CPUs' speed, as mtc-bench --round-cpus does
for the engine's A/B (docs/ci.md)."""

import os
import random


def allowed_cpus():
    """The CPUs this process may run on, sorted."""
    return sorted(os.sched_getaffinity(0))


def confine(cpus):
    """Every thread of this process (the engine's workers, CUDA's, torch's) on `cpus`; threads
    started later inherit it from the thread that starts them. os.sched_setaffinity(0, ...) would
    set the calling thread's alone. A thread that ends meanwhile is skipped; one started meanwhile
    by a thread not yet confined is caught by a second look, until a look finds no new thread.
    Raises OSError when a thread's CPUs cannot be set."""
    done = set()
    while True:
        tasks = set(os.listdir("/proc/self/task")) - done
        if not tasks:
            return
        for task in tasks:
            try:
                os.sched_setaffinity(int(task), cpus)
            except ProcessLookupError:
                pass
        done |= tasks


def refusal():
    """None when this process may set its threads' CPUs (checked by setting each to what it may
    use already), else why not (a container's seccomp policy, say)."""
    try:
        confine(allowed_cpus())
    except OSError as error:
        return f"cannot set the threads' CPUs: {error}"
    return None


def new_seed():
    """A seed of this process's own, so that processes draw different CPUs for the same run."""
    return random.SystemRandom().getrandbits(32)


def draw(allowed, count, seed, run):
    """`count` CPUs of `allowed` for run `run`, drawn without repeats from `seed`: the same draws
    for the same seed, a new one for each run."""
    return sorted(random.Random(f"{seed}:{run}").sample(allowed, count))


def usable_count(asked, allowed):
    """How many CPUs to confine each run to: `asked`, or 0 (no confinement) when the process may
    use `asked` CPUs or fewer, where confining would change nothing (a CPU machine's 2)."""
    return asked if 0 < asked < len(allowed) else 0
