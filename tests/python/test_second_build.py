"""Two builds of the module in one process, the baseline of an A/B of the module: the installed
package copied under another name imports its own extension beside mtc, and both copy;
scripts/install_module_as.py builds a tree's module under a name of its own, or says why not;
bench_python.py --baseline times such a build beside mtc and judges mtc against it (CPU target,
a few calls)."""

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import mtc

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "scripts" / "install_module_as.py"
BENCH = ROOT / "scripts" / "bench_python.py"
QUICK = ["--device", "cpu", "--warmup", "1", "--runs", "3", "--iters", "2"]


def second_copy(folder, name="mtc_second"):
    """The installed package, copied under `name` into `folder` (a second extension file)."""
    shutil.copytree(Path(mtc.__file__).parent, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def with_path(folder):
    """This process's environment with `folder` first on PYTHONPATH."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])))


def python(code, folder):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, env=with_path(folder), cwd="/")


def test_a_copy_under_another_name_imports_its_own_extension_beside_mtc(tmp_path):
    result = python("""
        import sys
        import torch
        import mtc_second
        assert "mtc" not in sys.modules, "the copy imported mtc's package"
        import mtc
        assert mtc_second._C is not mtc._C and mtc_second._C.__file__ != mtc._C.__file__
        data = {"a": [torch.arange(4.0), torch.ones(2, 3)], "b": (torch.zeros(5, dtype=torch.int64), "x")}
        first, second = mtc.start_copy(data, "cpu"), mtc_second.start_copy(data, "cpu")
        assert type(first) is not type(second)
        for out in (first.get(), second.get()):
            assert torch.equal(out["a"][1], data["a"][1]) and out["b"][1] == "x"
        print("ok")
    """, second_copy(tmp_path))
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def run_install(*args):
    return subprocess.run([sys.executable, str(INSTALL), *map(str, args)], capture_output=True, text=True,
                          timeout=1200)


def test_install_refuses_a_folder_that_is_not_a_tree_and_the_name_mtc(tmp_path):
    result = run_install(tmp_path, tmp_path / "out", "mtc_base")
    assert result.returncode == 2 and "not a source tree of this project" in result.stderr
    for name in ("mtc", "not-a-name"):
        result = run_install(ROOT, tmp_path / "out", name)
        assert result.returncode == 2 and f"got '{name}'" in result.stderr
    result = run_install(ROOT, tmp_path)
    assert result.returncode == 2 and "usage:" in result.stderr
    assert not (tmp_path / "out").exists()


def test_install_builds_this_tree_under_another_name_that_imports_beside_mtc(tmp_path):
    result = run_install(ROOT, tmp_path / "out", "mtc_base")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "installed" in result.stdout and (tmp_path / "out" / "mtc_base" / "__init__.py").is_file()
    check = python("import mtc, mtc_base; print(mtc_base._C.__file__)", tmp_path / "out")
    assert check.returncode == 0 and str(tmp_path / "out" / "mtc_base") in check.stdout, check.stderr


def run_bench(args, folder):
    return subprocess.run([sys.executable, str(BENCH), *QUICK, *args], capture_output=True, text=True,
                          timeout=300, env=with_path(folder))


def test_bench_python_judges_mtc_against_a_baseline_build(tmp_path):
    report = tmp_path / "report.json"
    # Each run of the A/B on one CPU drawn for it, where the process may use more than one.
    confined = 1 if len(os.sched_getaffinity(0)) > 1 else 0
    result = run_bench(["--methods", "to,mtc,mtc_again", "--baseline", "mtc_second", "--json", str(report),
                        "--ab-cpus", "1", "--fail-on", "none"], second_copy(tmp_path))
    assert result.returncode == 0, result.stderr
    doc = json.loads(report.read_text())
    settings = doc["settings"]
    if settings["ab_cpus_refused"]:  # a process that may not set its threads' CPUs: unconfined, said why
        confined = 0
        assert "the A/B runs unconfined" in result.stderr
    assert settings["baseline"]["package"] == "mtc_second" and settings["ab_cpus"] == confined
    assert settings["ab_cpus_asked"] == 1 and isinstance(settings["ab_cpus_seed"], int)
    assert {r["method"] for r in doc["rows"]} == {"to", "mtc", "mtc_again", "baseline"}
    judged = {(v["pattern"], v["against"]): v for v in doc["verdicts"]}
    assert set(judged) == {(p, a) for p in ("protocol", "step") for a in ("baseline", "mtc_again")}
    for v in judged.values():
        assert v["runs"] == 3 and v["low"] <= v["ratio"] <= v["high"]
        assert v["verdict"] in ("SAME", "FASTER", "SLOWER", "UNSURE")
    where = ", each run on 1 CPU drawn for it" if confined else ""
    assert f"protocol: mtc against the baseline build, in turns of 4 timed calls after 2 untimed{where}:" in result.stdout
    assert f"step: mtc against the baseline build, call by call{where}:" in result.stdout
    assert "over pairs of turns" in result.stdout and "over pairs of calls" in result.stdout
    paired = {(p["pattern"], p["against"]): p for p in doc["paired"]}
    assert set(paired) == set(judged) and all(len(p["run_log_ratios"]) == 3 for p in paired.values())
    allowed = os.sched_getaffinity(0)
    for p in paired.values():
        assert len(p["run_cpus"]) == (3 if confined else 0)
        assert all(len(cpus) == 1 and set(cpus) <= allowed for cpus in p["run_cpus"])


def sleeper(name, last, warm_s, cold_s):
    """A stand-in copy that takes warm_s after a call of its own and cold_s after another's: the
    state one method leaves for the next, which made a twin that ran second faster."""
    def copy(data, phases):
        time.sleep(warm_s if last[0] == name else cold_s)
        last[0] = name
        return data
    return copy


def test_paired_runs_cancel_what_the_previous_call_leaves_and_keep_a_real_difference():
    sys.path.insert(0, str(BENCH.parent))
    import bench_python

    last = [None]
    twins = bench_python.paired_runs(sleeper("a", last, 0.004, 0.006), sleeper("b", last, 0.004, 0.006),
                                     [[1]], "cpu", "protocol", runs=3, iters=40)
    # Taken apart by who went first, the twins' steps differ by 50 %; paired, they cancel. Five
    # pairs a run (40 calls in turns of 4): a run's median stands a late wake-up of a busy machine.
    assert all(abs(r) < 0.1 for r in twins["run_log_ratios"]), twins
    slower = bench_python.paired_runs(sleeper("a", last, 0.004, 0.004), sleeper("b", last, 0.008, 0.008),
                                      [[1]], "cpu", "protocol", runs=3, iters=40)
    assert all(abs(r - math.log(2)) < 0.2 for r in slower["run_log_ratios"]), slower


def test_back_to_back_each_side_is_timed_after_calls_of_its_own():
    # Back to back, an engine must copy back to back: a side is timed only after untimed calls of
    # its own in the same turn, so that a stand-in slower after the other side's call is timed warm
    # only (call by call, every call of either side would have come after the other's).
    sys.path.insert(0, str(BENCH.parent))
    import bench_python

    last = [None]
    runs = bench_python.paired_runs(sleeper("a", last, 0.002, 0.010), sleeper("b", last, 0.002, 0.010),
                                    [[1]], "cpu", "protocol", runs=3, iters=8)
    assert (runs["untimed_calls"], runs["timed_calls"]) == bench_python.TURNS["protocol"] == (2, 4)
    # Sleeps overshoot a little; a cold call among the timed ones would add 2 ms to a 2 ms mean.
    for means in (runs["candidate_run_means_s"], runs["other_run_means_s"]):
        assert all(0.002 <= m < 0.0035 for m in means), runs
    # In a step each call has its own gap: one call a turn, none untimed.
    assert bench_python.TURNS["step"] == (0, 1)


def test_bench_python_refuses_a_baseline_it_cannot_use(tmp_path):
    missing = run_bench(["--baseline", "no_such_package"], tmp_path)
    assert missing.returncode == 3 and "scripts/install_module_as.py" in missing.stderr, missing.stderr
    itself = run_bench(["--baseline", "mtc"], tmp_path)
    assert itself.returncode == 3 and "mtc's own extension" in itself.stderr, itself.stderr
    without_mtc = run_bench(["--methods", "to", "--baseline", "mtc_second"], second_copy(tmp_path))
    assert without_mtc.returncode == 2 and "mtc must be among --methods" in without_mtc.stderr


def test_install_starts_a_build_folder_afresh_only_when_another_tree_configured_it(tmp_path):
    sys.path.insert(0, str(INSTALL.parent))
    try:
        from install_module_as import built_from_elsewhere
    finally:
        sys.path.remove(str(INSTALL.parent))
    build, tree, other = tmp_path / "build", tmp_path / "tree", tmp_path / "other"
    assert not built_from_elsewhere(build, tree)  # no folder yet
    build.mkdir()
    assert not built_from_elsewhere(build, tree)  # no cache in it
    (build / "CMakeCache.txt").write_text(f"FOO:BOOL=ON\nCMAKE_HOME_DIRECTORY:INTERNAL={tree}\n")
    assert not built_from_elsewhere(build, tree.resolve())
    assert built_from_elsewhere(build, other.resolve())
