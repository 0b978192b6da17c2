"""bench_python.py --fail-on: the exit status a CI job reads from the module's A/B. The A/B's
runs are stand-ins of known ratios here, so each verdict is known; the rest of the run is real
(CPU target, a few calls)."""

import json
import sys
from pathlib import Path

import pytest

import mtc

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))
import bench_python  # noqa: E402
from bench_python_report import FAIL_ON, failing_verdicts  # noqa: E402

QUICK = ["--device", "cpu", "--warmup", "1", "--runs", "3", "--iters", "2", "--methods", "to,mtc,mtc_again"]
# Each run's log ratio (the other side's time over mtc's): the baseline 10 % faster than mtc in a
# step (mtc SLOWER), the same back to back; mtc_again always the same as mtc.
LOGS = {("step", "baseline"): [-0.10, -0.11, -0.09], ("protocol", "baseline"): [0.001, -0.001, 0.0]}


def known_runs(candidate, other, batches, device, pattern, runs, iters, cpus=0, seed=0):
    against = "baseline" if other is known_runs.baseline else "mtc_again"
    logs = LOGS.get((pattern, against), [0.0, 0.001, -0.001])
    out = {"untimed_calls": 0, "timed_calls": 1, "run_cpus": [], "run_log_ratios": logs,
           "candidate_run_means_s": [1e-4] * 3, "other_run_means_s": [1e-4] * 3}
    if against == "mtc_again":  # as a process whose confinement failed in its first run reports it
        out["confine_error"] = "run 1: a stand-in's refusal"
    return out


@pytest.fixture
def stand_in_ab(monkeypatch):
    """mtc's own package as the baseline build, and the A/B's runs from LOGS."""
    monkeypatch.setattr(bench_python, "import_baseline", lambda name: mtc)
    real_methods = bench_python.methods

    def methods(device, original=None, baseline=None):
        available = real_methods(device, original, baseline)
        known_runs.baseline = available.get("baseline")
        return available

    monkeypatch.setattr(bench_python, "methods", methods)
    monkeypatch.setattr(bench_python, "paired_runs", known_runs)


@pytest.mark.parametrize("fail_on, code", [("slower", 1), ("none", 0), ("faster", 0)])
def test_the_exit_status_follows_the_verdicts_against_the_baseline(stand_in_ab, tmp_path, capsys, fail_on, code):
    report = tmp_path / "report.json"
    assert bench_python.main([*QUICK, "--baseline", "mtc_base", "--fail-on", fail_on, "--json", str(report)]) == code
    doc = json.loads(report.read_text())  # written before the exit, whatever it is
    verdicts = {(v["pattern"], v["against"]): v["verdict"] for v in doc["verdicts"]}
    assert verdicts[("step", "baseline")] == "SLOWER" and verdicts[("protocol", "baseline")] == "SAME"
    assert doc["settings"]["fail_on"] == fail_on and doc["exit_code"] == code
    # A report with a baseline and a failed confinement, which the schema's own test does not make.
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed: the schema cannot be checked")
    schema = json.loads((SCRIPTS.parent / "results" / "bench_python.schema.json").read_text())
    assert doc["settings"]["baseline"]["package"] == "mtc_base"
    assert [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)] == []
    err = capsys.readouterr().err
    said = "bench_python.py: --fail-on slower: step: mtc SLOWER than the baseline build (0.905x"
    assert (said in err) == (code == 1), err


def test_the_default_fails_on_a_slower_mtc_only():
    assert bench_python.parse_args(QUICK, "").fail_on == "slower"
    verdicts = [{"pattern": "step", "against": against, "verdict": verdict}
                for against in ("baseline", "mtc_again") for verdict in ("SAME", "FASTER", "SLOWER", "UNSURE")]
    failing = {fail_on: [(v["against"], v["verdict"]) for v in failing_verdicts(verdicts, fail_on)]
               for fail_on in FAIL_ON}
    # mtc_again's verdicts judge the measurement, not the change: they never fail the job.
    assert failing == {"slower": [("baseline", "SLOWER")], "faster": [("baseline", "FASTER")],
                       "any": [("baseline", "FASTER"), ("baseline", "SLOWER")], "none": []}


def test_a_copy_that_differs_exits_4_even_when_the_ab_fails(stand_in_ab, monkeypatch, tmp_path, capsys):
    # The copy's check says every output differs: its times mean nothing, whatever the A/B says.
    monkeypatch.setattr(bench_python, "difference", lambda out, batch, device: "a stand-in difference")
    report = tmp_path / "report.json"
    assert bench_python.main([*QUICK, "--baseline", "mtc_base", "--json", str(report)]) == 4
    doc = json.loads(report.read_text())
    assert doc["exit_code"] == 4 and not any(row["verified"] for row in doc["rows"])
    assert {(v["pattern"], v["verdict"]) for v in doc["verdicts"] if v["against"] == "baseline"} == {
        ("protocol", "SAME"), ("step", "SLOWER")}
    assert "--fail-on slower: step: mtc SLOWER" in capsys.readouterr().err


def test_too_few_runs_for_a_verdict_say_that_the_job_cannot_fail(stand_in_ab, tmp_path, capsys):
    few = [*QUICK[:5], "2", *QUICK[6:]]
    assert few[4:6] == ["--runs", "2"]
    bench_python.main([*few, "--baseline", "mtc_base", "--fail-on", "any", "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert "--runs 2: fewer than 3 runs give no verdict, so --fail-on any cannot fail this run" in err, err
