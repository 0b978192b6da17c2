"""scripts/bench_python.py --original: the original package timed beside mtc when it can be
imported, a clear message and exit code 3 when it cannot (CPU target, a few calls)."""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_python.py"
sys.path.insert(0, str(SCRIPT.parent))
import bench_python  # noqa: E402
import report_files  # noqa: E402
QUICK = ["--device", "cpu", "--warmup", "1", "--runs", "2", "--iters", "2"]


def run(args, **env):
    return subprocess.run([sys.executable, str(SCRIPT), *QUICK, *args], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, **env))


def test_original_that_cannot_be_imported_exits_3_saying_so(tmp_path):
    result = run(["--original"], PYTHONPATH=str(tmp_path))
    assert result.returncode == 3, result.stderr
    assert "cannot import accvlab.multi_tensor_copier" in result.stderr
    assert "docs/python.md" in result.stderr and result.stdout == ""


@pytest.mark.parametrize("methods, said", [
    ("to,mtc,mtc", "mtc named twice"),
    ("to,to,mtc", "to named twice"),
    ("to,mtc_again", "mtc_again needs mtc beside it"),
])
def test_methods_that_would_give_rows_no_reader_could_tell_apart_exit_2(tmp_path, methods, said):
    report = tmp_path / "report.json"
    result = run(["--methods", methods, "--json", str(report)])
    assert result.returncode == 2 and said in result.stderr, result.stderr
    assert not report.exists()


def test_original_is_timed_interleaved_beside_mtc(tmp_path):
    # A stand-in with the original's call shape (start_copy(data, device).get()), made of mtc.
    package = tmp_path / "accvlab" / "multi_tensor_copier"
    package.mkdir(parents=True)
    (tmp_path / "accvlab" / "__init__.py").write_text("")
    (package / "__init__.py").write_text(textwrap.dedent("""
        import mtc

        def start_copy(data, device):
            return mtc.start_copy(data, device)
    """))
    report = tmp_path / "report.json"
    result = run(["--original", "--json", str(report)], PYTHONPATH=str(tmp_path))
    assert result.returncode == 0, result.stderr
    written = json.loads(report.read_text())
    rows = written["rows"]
    assert written["settings"]["protocol_frees_previous_output_inside"] is True
    methods = {(row["pattern"], row["method"]) for row in rows}
    assert {("protocol", "original"), ("step", "original"), ("protocol", "mtc")} <= methods
    assert all(row["verified"] for row in rows)
    assert "| protocol | original |" in result.stdout
    assert written["settings"]["order"] == "rotated" and "each run starting one method further on" in result.stdout
    # Every start_copy method's timed calls are split into their phases; to has none.
    for row in rows:
        phases = row["phases_median_s"]
        if row["method"] in ("to", "to_nb"):
            assert phases is None and row["start_median_s"] is None
        else:
            assert set(phases) == {"start_copy", "get", "drop_handle", "synchronize", "rest", "without_synchronize"}
            assert row["start_median_s"] == phases["start_copy"] > 0
    assert "step original, the timed calls' phases (medians): start_copy " in result.stdout
    # Faster or slower: the stand-in is mtc itself.
    assert "protocol: mtc " in result.stdout and "than the original package (medians" in result.stdout


def test_comparisons_are_the_ratio_of_medians_and_of_each_runs_means():
    def row(pattern, method, median, run_means):
        return {"pattern": pattern, "method": method, "time": {"median_s": median, "run_means_s": run_means}}

    report = {"rows": [row("protocol", "to", 8e-3, [8e-3, 8e-3]),
                       row("protocol", "mtc", 200e-6, [200e-6, 250e-6]),
                       row("protocol", "original", 1.6e-3, [1.6e-3, 1.5e-3]),
                       row("protocol", "mtc_nodefer", 250e-6, [240e-6, 250e-6]),
                       row("step", "mtc", 500e-6, [500e-6])]}
    lines = bench_python.comparisons(report)
    assert lines == ["protocol: mtc 8.0x faster than the original package (medians 200.0 us and 1.60 ms); "
                     "run by run 6.0-8.0x over 2 runs (median 7.0x, mtc faster in 2)",
                     "protocol: mtc 1.25x faster than without its deferred release (medians 200.0 us and "
                     "250.0 us); run by run 1.00-1.20x over 2 runs (median 1.10x, mtc faster in 1)"]


def test_a_slower_mtc_is_called_slower_and_the_runs_it_won_are_counted():
    def row(method, median, run_means):
        return {"pattern": "step", "method": method, "time": {"median_s": median, "run_means_s": run_means}}

    report = {"rows": [row("mtc", 300e-6, [300e-6, 310e-6, 290e-6]),
                       row("mtc_again", 280e-6, [270e-6, 320e-6, 270e-6])]}
    assert bench_python.comparisons(report) == [
        "step: mtc 1.07x slower than itself run again (an A/A pair) (medians 300.0 us and 280.0 us); "
        "run by run 0.90-1.03x over 3 runs (median 0.93x, mtc faster in 1); in blocks, not the A/B: its verdict is "
        "below"]


def test_each_run_starts_one_method_further_on():
    names = ["to", "mtc", "original"]
    orders = [bench_python.run_order(names, r) for r in range(6)]
    assert orders[:3] == [["to", "mtc", "original"], ["mtc", "original", "to"], ["original", "to", "mtc"]]
    assert orders[3:] == orders[:3]
    # Over three runs each method ran first, second and third once.
    for name in names:
        assert sorted(order.index(name) for order in orders[:3]) == [0, 1, 2]


@pytest.mark.parametrize("rotate", [True, False])
def test_measure_runs_the_methods_in_run_order_unless_fixed(rotate):
    calls = []
    copies = {name: (lambda data, phases, name=name: calls.append(name)) for name in ("a", "b", "c")}
    bench_python.measure(copies, [None], "cpu", "protocol", warmup=0, runs=3, iters=1, rotate=rotate)
    fixed = ["a", "b", "c"] * 3
    assert calls == (["a", "b", "c", "b", "c", "a", "c", "a", "b"] if rotate else fixed)


def test_the_report_says_how_the_runs_were_ordered():
    from bench_python_report import runs_line

    assert runs_line({"runs": 12, "iters": 50, "order": "rotated"}) == (
        "12 runs of 50 timed calls per method and pattern, interleaved, each run starting one method "
        "further on")
    assert runs_line({"runs": 10, "iters": 50}).endswith("the methods in the same order in every run")


def test_phases_leave_the_rest_of_each_call_and_take_medians_call_by_call():
    phases = bench_python.Phases()
    phases.add_call(10, 100, 5)
    phases.close_call(130, 4)
    phases.close_call(999, 9)  # a call that recorded no phases (.to()) leaves none
    phases.add_call(30, 300, 7)
    phases.close_call(400, 3)
    phases.add_call(20, 200, 6)
    phases.close_call(240, 8)
    assert phases.ns["synchronize"] == [4, 3, 8]
    assert phases.ns["rest"] == [11, 60, 6]
    # The call as the engine's own benchmarks end it (get() returned): its median, not a sum of medians.
    assert phases.ns["without_synchronize"] == [126, 397, 232]
    assert phases.medians_s() == pytest.approx(
        {"start_copy": 20e-9, "get": 200e-9, "drop_handle": 6e-9, "synchronize": 4e-9, "rest": 11e-9,
         "without_synchronize": 232e-9})
    assert bench_python.Phases().medians_s() is None


def test_the_collector_clock_counts_collections_inside_its_block_only():
    import gc

    with bench_python.CollectorClock() as clock:
        gc.collect()
    inside = clock.ns
    gc.collect()
    assert inside > 0 and clock.ns == inside
    assert clock._on_collection not in gc.callbacks


def test_mtc_is_timed_with_and_without_its_deferred_release(tmp_path):
    report = tmp_path / "report.json"
    result = run(["--methods", "to,mtc,mtc_nodefer", "--json", str(report)])
    assert result.returncode == 0, result.stderr
    rows = json.loads(report.read_text())["rows"]
    methods = {(row["pattern"], row["method"]) for row in rows}
    assert {("protocol", "mtc_nodefer"), ("step", "mtc_nodefer")} <= methods
    assert "than without its deferred release (medians" in result.stdout
    # Where mtc's time went, for both: the module's parts and the engine's, and the collector's.
    parts = {(row["pattern"], row["method"]): row["parts_us"] for row in rows if "parts_us" in row}
    assert set(parts) == {(p, m) for p in ("protocol", "step") for m in ("mtc", "mtc_nodefer")}
    assert all({"walk_us", "build_us", "release_us", "traverse_us", "drop_previous_result_us", "drop_handle_us",
                "collector_mean_us"} <= set(p) for p in parts.values())
    assert "step mtc_nodefer, medians of 200 more calls" in result.stdout


def test_both_patterns_free_the_previous_output_inside_the_timed_region():
    # As the original package's evaluation does (`_ = handle.get()`, inside its clock): an output
    # whose free takes 20 ms makes every call after the first at least that long.
    class SlowToFree:
        def __del__(self):
            time.sleep(0.02)

    copies = {"slow": lambda data, timings: SlowToFree()}
    batches = [[torch.zeros(1)] for _ in range(bench_python.ROTATION)]
    for pattern in ("protocol", "step"):
        summary, _ = bench_python.measure(copies, batches, "cpu", pattern, warmup=0, runs=1, iters=4)["slow"]
        assert summary["median_s"] >= 0.02, pattern


@pytest.mark.parametrize("paths, message", [
    (lambda tmp, config: ["--json", str(tmp)], "--json {tmp}: a folder"),
    (lambda tmp, config: ["--md", str(tmp / "missing" / "r.md")], "no folder {tmp}/missing to write it in"),
    (lambda tmp, config: ["--json", str(config)], "the config itself"),
    (lambda tmp, config: ["--md", str(tmp / "r"), "--json", str(tmp / "r")], "--md and --json: the same file"),
])
def test_a_report_path_that_cannot_be_written_exits_2_before_anything_is_measured(tmp_path, paths, message):
    config = tmp_path / "config.json"
    config.write_text(Path(bench_python.__file__).resolve().parents[1].joinpath("configs/streampetr.json").read_text())
    result = run(["--config", str(config), *paths(tmp_path, config)])
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and message.format(tmp=tmp_path) in result.stderr, result.stderr
    assert "run 1/2" not in result.stderr and result.stdout == ""
    assert json.loads(config.read_text())["structure"], "the config was overwritten"


@pytest.mark.parametrize("item, message", [
    ("samples", "--set samples: not PARAM=VALUE"),
    ("=4", "--set =4: not PARAM=VALUE"),
    ("samples=four", "--set samples=four: the value is not JSON"),
    ("nope=4", "no parameter 'nope' to set"),
])
def test_a_set_that_is_not_a_config_param_in_json_exits_2_naming_it(item, message):
    result = run(["--set", item])
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_a_config_that_is_not_json_exits_2_naming_the_file(tmp_path):
    config = tmp_path / "broken.json"
    config.write_text("{")
    result = run(["--config", str(config)])
    assert result.returncode == 2 and f"{config}: not JSON" in result.stderr, result.stderr


def test_reports_are_written_whole_or_leave_the_old_ones(tmp_path):
    old = tmp_path / "report.md"
    old.write_text("old")
    with pytest.raises(OSError):
        report_files.write_whole([(old, "new"), (tmp_path / "missing" / "report.json", "{}")])
    assert old.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]
    report_files.write_whole([(old, "new"), (tmp_path / "report.json", "{}")])
    assert old.read_text() == "new" and (tmp_path / "report.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "report.md"]


def test_each_run_of_every_method_is_reported_done():
    seen = []
    copies = {"a": lambda batch, phases: batch, "b": lambda batch, phases: batch}
    bench_python.measure(copies, [[torch.zeros(1)]], "cpu", "protocol", 0, 3, 1, progress=seen.append)
    assert seen == [1, 2, 3]
