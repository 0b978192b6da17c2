#!/usr/bin/env python3
"""scripts/microbench_env_ab.py on synthetic benchmark files whose truth is known: a case that is
lower with the setting in every process, one that is higher, one whose sides overlap, and a case
present on one side only (left out), and a several-GPU case whose per-GPU ratios (with every GPU
over alone) are known. Then scripts/gpu-check-envab.sh, which runs the processes, over a stand-in
mtc_engine_bench whose case is lower with the setting, and one that fails with it.

    python3 tests/scripts/microbench_env_ab_test.py
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "microbench_env_ab.py"
RUNNER = ROOT / "scripts" / "gpu-check-envab.sh"

# A stand-in for mtc_engine_bench: writes its --benchmark_out with one case, 100 us without the
# setting MTC_STANDIN_SETTING and 80 us with it, or exits 3 with it when it is "fail".
STAND_IN = """#!/usr/bin/env python3
import json, os, sys
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--benchmark_out="))
setting = os.environ.get("MTC_STANDIN_SETTING")
if setting == "fail":
    sys.exit(3)
us = 80.0 if setting else 100.0
rows = [{"name": "case", "run_name": "case", "run_type": "iteration", "repetition_index": k,
         "real_time": us, "time_unit": "us", "median_us": us + k} for k in range(3)]
json.dump({"context": {}, "benchmarks": rows}, open(out, "w"))
"""


def bench_file(path, medians):
    """One process's file: three repetitions per case around `medians` (case -> us)."""
    benchmarks = []
    for case, us in medians.items():
        # Repetitions whose mean is not their median; a file of aggregates only has the median.
        if case != "aggregates_only":
            for k, value in enumerate((us - 1.0, us, us + 50.0)):
                benchmarks.append({"name": case, "run_name": case, "run_type": "iteration", "repetition_index": k,
                                   "real_time": 999.0, "time_unit": "us", "median_us": value})
        benchmarks.append({"name": case + "_stddev", "run_name": case, "run_type": "aggregate",
                           "aggregate_name": "stddev", "real_time": 1.0, "time_unit": "us", "median_us": 1.0})
        if case == "aggregates_only":
            benchmarks.append({"name": case + "_median", "run_name": case, "run_type": "aggregate",
                               "aggregate_name": "median", "real_time": us, "time_unit": "ms"})
    path.write_text(json.dumps({"context": {}, "benchmarks": benchmarks}))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        files = []
        for i in range(4):
            without = {"lower": 100.0 + i, "higher": 50.0 + i, "same": 80.0 + 2 * i, "aggregates_only": 7.0}
            with_ = {"lower": 90.0 - i, "higher": 60.0 + i, "same": 81.0 + 2 * i, "one_side": 1.0,
                     "aggregates_only": 8.0}
            for side, medians in (("without", without), ("with", with_)):
                files.append(tmp / f"{side}-{i}.json")
                bench_file(files[-1], medians)
        md, out = tmp / "ab.md", tmp / "ab.json"
        done = subprocess.run([sys.executable, str(SCRIPT), "X=1", str(md), str(out)] + [str(f) for f in files],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        rows = {r["case"]: r for r in json.loads(out.read_text())["cases"]}
        assert set(rows) == {"lower", "higher", "same", "aggregates_only"}, rows.keys()
        # A time in ms without median_us, read in us.
        assert rows["aggregates_only"]["without_us"] == [7000.0] * 4, rows["aggregates_only"]
        # The median of a process's repetitions, not their mean nor the aggregate lines.
        assert rows["lower"]["without_us"] == [100.0, 101.0, 102.0, 103.0], rows["lower"]
        assert rows["lower"]["reading"] == "lower in every process (chance 0.029)", rows["lower"]
        assert rows["higher"]["reading"].startswith("higher in every process"), rows["higher"]
        assert rows["same"]["reading"] == "within the spread", rows["same"]
        assert abs(rows["lower"]["ratio"] - 88.5 / 101.5) < 1e-9, rows["lower"]["ratio"]
        assert "| lower |" in md.read_text()

        # A several-GPU case: GPU 0 1.25x its time alone without, 1.10x with; GPU 1 1.0x both.
        gpu_files = []
        for i in range(3):
            for side, g0 in (("without", 125.0), ("with", 110.0)):
                gpu_files.append(tmp / f"gpu-{side}-{i}.json")
                gpu_files[-1].write_text(json.dumps({"context": {}, "benchmarks": [
                    {"name": "multi_median", "run_name": "multi", "run_type": "aggregate", "aggregate_name": "median",
                     "real_time": 130.0, "time_unit": "us", "gpu0_us": g0 + i, "gpu0_alone_us": 100.0 + 0.8 * i,
                     "gpu1_us": 90.0, "gpu1_alone_us": 90.0, "slowest_us": 140.0}]}))
        done = subprocess.run([sys.executable, str(SCRIPT), "X=1", str(md), str(out)] + [str(f) for f in gpu_files],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        rows = {r["case"]: r for r in json.loads(out.read_text())["cases"]}
        gpu0 = rows["multi, GPU 0 with every GPU / alone"]
        assert [round(v, 6) for v in gpu0["without"]] == [1.25, round(126 / 100.8, 6), round(127 / 101.6, 6)], gpu0
        assert gpu0["reading"].startswith("lower in every process"), gpu0
        assert rows["multi, GPU 1 with every GPU / alone"]["reading"] == "within the spread", rows
        assert rows["multi"]["without_us"] == [130.0] * 3, rows["multi"]
        assert "| multi, GPU 0 with every GPU / alone | 1.250x" in md.read_text(), md.read_text()

        bad = subprocess.run([sys.executable, str(SCRIPT), "X=1", str(md), str(out), str(files[0])],
                             capture_output=True, text=True)
        assert bad.returncode == 2, bad
        missing = subprocess.run([sys.executable, str(SCRIPT), "X=1", str(md), str(out), str(files[0]),
                                  str(tmp / "nowhere.json")], capture_output=True, text=True)
        assert missing.returncode == 2 and "cannot read" in missing.stderr, missing
        runner_checks(tmp)
    print("microbench_env_ab: ok")


def runner_checks(tmp):
    build = tmp / "build"
    build.mkdir()
    stand_in = build / "mtc_engine_bench"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    out = tmp / "runner-out"
    out.mkdir()

    def run(setting):
        return subprocess.run(["bash", str(RUNNER), str(out), str(build), setting, "case", "3"],
                              capture_output=True, text=True, env={**os.environ, "MTC_PYTHON": sys.executable})

    done = run("MTC_STANDIN_SETTING=1")
    assert done.returncode == 0, done
    rows = {r["case"]: r for r in json.loads((out / "env_ab.json").read_text())["cases"]}
    assert rows["case"]["without_us"] == [101.0] * 3 and rows["case"]["with_us"] == [81.0] * 3, rows
    assert rows["case"]["reading"].startswith("lower in every process"), rows
    failed = run("MTC_STANDIN_SETTING=fail")
    assert failed.returncode == 1, failed
    assert "mtc_engine_bench exited 3 (with MTC_STANDIN_SETTING=fail, process pair 1)" in failed.stdout, failed


if __name__ == "__main__":
    main()
