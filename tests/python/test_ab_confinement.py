"""The module's A/B with each run confined to CPUs drawn for it (bench_python_ab.paired_runs with
`cpus`, scripts/process_cpus.py): the CPUs come back after the pass, also when a copy fails; a
confinement that fails midway leaves the later runs unconfined and says so; the verdict line says
how many runs were confined. Stand-in copies that sleep: no engine, no GPU."""

import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import bench_python_ab  # noqa: E402
import bench_python_report  # noqa: E402
import process_cpus  # noqa: E402

ALLOWED = os.sched_getaffinity(0)
needs_two_cpus = pytest.mark.skipif(len(ALLOWED) < 2, reason="one CPU: confining it to one changes nothing")


def nap(data, phases):
    time.sleep(0.0005)
    return data


@needs_two_cpus
def test_each_run_is_confined_and_the_cpus_come_back():
    seen = []

    def watched(data, phases):
        seen.append(os.sched_getaffinity(0))
        return nap(data, phases)

    out = bench_python_ab.paired_runs(watched, nap, [[1]], "cpu", "step", runs=3, iters=2, cpus=1, seed=7)
    assert len(out["run_cpus"]) == 3 and all(len(c) == 1 for c in out["run_cpus"])
    assert {frozenset(s) for s in seen} <= {frozenset(c) for c in out["run_cpus"]}
    assert "confine_error" not in out and os.sched_getaffinity(0) == ALLOWED
    again = bench_python_ab.paired_runs(nap, nap, [[1]], "cpu", "step", runs=3, iters=2, cpus=1, seed=7)
    assert again["run_cpus"] == out["run_cpus"]  # the same seed draws the same CPUs


@needs_two_cpus
def test_the_cpus_come_back_when_a_copy_fails():
    def failing(data, phases):
        raise RuntimeError("a copy failed")

    with pytest.raises(RuntimeError, match="a copy failed"):
        bench_python_ab.paired_runs(failing, nap, [[1]], "cpu", "step", runs=2, iters=2, cpus=1)
    assert os.sched_getaffinity(0) == ALLOWED


@needs_two_cpus
def test_a_confinement_that_fails_midway_leaves_the_later_runs_unconfined(monkeypatch, capsys):
    real = process_cpus.confine
    calls = []

    def second_fails(cpus):
        calls.append(cpus)
        if len(calls) == 2:
            raise PermissionError(1, "Operation not permitted")
        real(cpus)

    monkeypatch.setattr(process_cpus, "confine", second_fails)
    out = bench_python_ab.paired_runs(nap, nap, [[1]], "cpu", "step", runs=3, iters=2, cpus=1)
    assert len(out["run_cpus"]) == 1 and "run 2:" in out["confine_error"]
    assert len(out["run_log_ratios"]) == 3 and os.sched_getaffinity(0) == ALLOWED
    assert "could not be confined" in capsys.readouterr().err


def test_the_verdict_line_says_how_many_runs_were_confined():
    def report(confined_runs):
        paired = {"pattern": "step", "against": "baseline", "untimed_calls": 0, "timed_calls": 1,
                  "run_log_ratios": [0.01, 0.0, -0.01, 0.02], "run_cpus": [[0]] * confined_runs}
        return {"settings": {"ab_cpus": 8}, "paired": [paired]}

    assert ", each run on 8 CPUs drawn for it:" in bench_python_report.verdict_lines(report(4))[0]
    assert ", 2 of its 4 runs on 8 CPUs drawn for each (then unconfined):" in \
        bench_python_report.verdict_lines(report(2))[0]
    assert ", unconfined (the confinement failed):" in bench_python_report.verdict_lines(report(0))[0]
    unconfined = {"settings": {"ab_cpus": 0}, "paired": report(0)["paired"]}
    assert "call by call: " in bench_python_report.verdict_lines(unconfined)[0]
