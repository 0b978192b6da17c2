#!/usr/bin/env python3
"""scripts/process_cpus.py: the draws are reproducible, new for each run and without repeats;
the count falls to 0 where confining would change nothing; confine() reaches threads started
before it (a plain os.sched_setaffinity(0, ...) reaches the caller's alone) and ones started after;
a process that may not set its threads' CPUs is told apart.

    python3 tests/scripts/process_cpus_test.py
"""
import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import process_cpus  # noqa: E402


def check(condition, message):
    if not condition:
        print(f"process_cpus_test: FAILED: {message}", file=sys.stderr)
        sys.exit(1)


def test_draws():
    allowed = list(range(16))
    first = process_cpus.draw(allowed, 4, "protocol", 0)
    check(first == process_cpus.draw(allowed, 4, "protocol", 0), "the same seed and run drew other CPUs")
    check(len(set(first)) == 4 and set(first) <= set(allowed), f"not 4 distinct allowed CPUs: {first}")
    runs = {tuple(process_cpus.draw(allowed, 4, "protocol", r)) for r in range(20)}
    check(len(runs) > 10, f"20 runs drew only {len(runs)} different sets")
    check(len({process_cpus.new_seed() for _ in range(10)}) > 1, "ten seeds were all the same")
    seen = {c for r in range(50) for c in process_cpus.draw(allowed, 4, "step", r)}
    check(seen == set(allowed), f"50 runs never drew CPUs {sorted(set(allowed) - seen)}")


def test_usable_count():
    check(process_cpus.usable_count(4, list(range(16))) == 4, "4 of 16 CPUs refused")
    for asked, cpus in ((4, 4), (4, 2), (0, 16), (-1, 16)):
        check(process_cpus.usable_count(asked, list(range(cpus))) == 0, f"{asked} of {cpus} CPUs not 0")


def test_confine_reaches_every_thread():
    allowed = process_cpus.allowed_cpus()
    release = threading.Event()
    masks = {}

    def sleeper(name):
        masks[name + " before"] = os.sched_getaffinity(0)
        release.wait()
        masks[name] = os.sched_getaffinity(0)

    early = threading.Thread(target=sleeper, args=("early",))
    early.start()
    process_cpus.confine(allowed[:1])
    late = threading.Thread(target=sleeper, args=("late",))
    late.start()
    release.set()
    early.join()
    late.join()
    check(os.sched_getaffinity(0) == set(allowed[:1]), "the caller was not confined")
    check(masks["early"] == set(allowed[:1]), f"a thread started before stayed on {masks['early']}")
    check(masks["late before"] == set(allowed[:1]), "a thread started after did not inherit the confinement")
    process_cpus.confine(allowed)
    check(os.sched_getaffinity(0) == set(allowed), "the confinement was not lifted")


def test_refusal():
    check(process_cpus.refusal() is None, "this process may set its own threads' CPUs, yet refused")
    real = os.sched_setaffinity

    def refuse(pid, cpus):
        raise PermissionError(1, "Operation not permitted")

    os.sched_setaffinity = refuse
    try:
        why = process_cpus.refusal()
    finally:
        os.sched_setaffinity = real
    check(why is not None and "Operation not permitted" in why, f"a refused confinement said {why!r}")


if __name__ == "__main__":
    test_draws()
    test_usable_count()
    test_confine_reaches_every_thread()
    test_refusal()
    print("process_cpus_test: all passed")
