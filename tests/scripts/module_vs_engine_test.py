#!/usr/bin/env python3
"""scripts/module_vs_engine.py on synthetic reports whose ratios are known: the module's step over
the engine's, with and without the module's closing synchronize; a report without what the
comparison needs exits 2 naming the file.

    python3 tests/scripts/module_vs_engine_test.py
"""
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "module_vs_engine.py"
CASE = "BM_EngineCopy<Direction::kHostToDevice>/1/"


def bench_python(step_s=250e-6, without_s=200e-6):
    phases = {"start_copy": 60e-6, "synchronize": 45e-6}
    if without_s is not None:
        phases["without_synchronize"] = without_s
    return {"rows": [{"pattern": "protocol", "method": "mtc", "time": {"median_s": 100e-6}, "phases_median_s": phases},
                     {"pattern": "step", "method": "to", "time": {"median_s": 5e-3}, "phases_median_s": None},
                     {"pattern": "step", "method": "mtc", "time": {"median_s": step_s}, "phases_median_s": phases}]}


def aggregate(case, name, median_us):
    run = f"{CASE}{case}/manual_time"
    return {"name": f"{run}_{name}", "run_name": run, "run_type": "aggregate", "aggregate_name": name,
            "real_time": 1.0, "time_unit": "us", "median_us": median_us}


def run(reports, extra=()):
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, report in enumerate(reports):
            path = pathlib.Path(tmp) / f"report-{i}.json"
            path.write_text(report if isinstance(report, str) else json.dumps(report))
            paths.append(str(path))
        md = pathlib.Path(tmp) / "out.md"
        md.write_text("table\n")
        done = subprocess.run([sys.executable, str(SCRIPT), *paths, "--md", str(md), *extra],
                              capture_output=True, text=True)
        return done, md.read_text(), paths


def main():
    engine = {"benchmarks": [aggregate("399", "mean", 999.0), aggregate("399", "median", 160.0),
                             aggregate("399", "stddev", 5.0), aggregate("1423", "median", 125.0),
                             aggregate("1407", "median", 1.0)]}
    done, md, _ = run([bench_python(), engine])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2, lines
    # The median aggregate, not the mean or another case: 250 / 160 and 200 / 160; 250 / 125, 200 / 125.
    assert "over the engine's step after a 5 ms sleep (BM_EngineCopy 399) 160.0 us: 1.56x" in lines[0], lines
    assert "without its closing synchronize 200.0 us: 1.25x" in lines[0], lines
    assert "busy gap (BM_EngineCopy 1423) 125.0 us: 2.00x" in lines[1] and lines[1].endswith(": 1.60x"), lines
    assert md == "table\n\n" + done.stdout, md

    # A report from before the calls were timed without their synchronize: the first ratio only.
    done, _, _ = run([bench_python(without_s=None), {"benchmarks": [aggregate("399", "median", 200.0)]}])
    assert done.returncode == 0 and done.stdout == (
        "module's step 250.0 us (bench_python, a 2 ms sleep) over the engine's step after a 5 ms sleep "
        "(BM_EngineCopy 399) 200.0 us: 1.25x\n"), done.stdout

    # What the comparison needs, missing: exit 2, one line naming the file; the Markdown untouched.
    no_step = {"rows": bench_python()["rows"][:2]}
    for reports, why in (([no_step, engine], "no step row of mtc"),
                         ([bench_python(), {"benchmarks": [aggregate("1423", "median", 1.0)]}], "no median of"),
                         ([bench_python(), {"benchmarks": [dict(aggregate("399", "median", 0.0), error_occurred=True,
                                                                 error_message="no CUDA device")]}],
                          "no median of BM_EngineCopy<Direction::kHostToDevice>/1/399 (it failed: no CUDA device)"),
                         ([bench_python(), "{"], "cannot be read as JSON"),
                         ([bench_python(step_s=0.0), engine], "the step row of mtc has no median time"),
                         ([bench_python(), {"benchmarks": [aggregate("399", "median", 0.0)]}], "no median of")):
        done, md, paths = run(reports)
        assert done.returncode == 2 and done.stdout == "" and md == "table\n", (done, md)
        assert done.stderr.count("\n") == 1 and why in done.stderr, done.stderr
        named = paths[0] if "step row" in why else paths[1]
        assert done.stderr.startswith(f"module_vs_engine.py: {named}: "), done.stderr
    # An --md that cannot be written (a later --md wins): exit 2, one line naming it, no traceback.
    done, _, _ = run([bench_python(), engine], extra=("--md", "/nonexistent-folder/out.md"))
    assert done.returncode == 2, done
    assert done.stderr.startswith("module_vs_engine.py: --md /nonexistent-folder/out.md: ") and \
        done.stderr.count("\n") == 1, done.stderr
    print("module_vs_engine_test: all passed")


if __name__ == "__main__":
    main()
