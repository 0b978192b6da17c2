#!/usr/bin/env python3
"""The busy-neighbours check without a GPU: scripts/neighbours_summary.py on synthetic runs whose
truth is known (a kind twice as slow in one round and equal in the other, a benchmark that
reports its times in milliseconds, a repetition whose mean carries one stalled copy, steal and
busy shares from known /proc/stat lines); scripts/busy_cpus.c's arguments; and
scripts/gpu-check-neighbours.sh end to end with a stand-in benchmark and a stand-in nvidia-smi
of three GPUs, which must leave no neighbour process behind.

    python3 tests/scripts/neighbours_test.py
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUMMARY = ROOT / "scripts" / "neighbours_summary.py"


def run_file(path, entries):
    path.write_text(json.dumps({"context": {}, "benchmarks": entries}))


def copy_case(median_us):
    """Two repetitions of a copy benchmark: real_time is a mean the summary must not read."""
    return [{"name": "BM_Copy", "run_name": "BM_Copy", "run_type": "iteration", "real_time": 99999.0,
             "time_unit": "us", "median_us": median_us} for _ in range(2)] + [
        {"name": "BM_Copy_mean", "run_name": "BM_Copy", "run_type": "aggregate", "aggregate_name": "mean",
         "real_time": 1.0, "time_unit": "us"}]


def walk_case(ms):
    return [{"name": "BM_Walk", "run_name": "BM_Walk", "run_type": "iteration", "real_time": ms, "time_unit": "ms"}]


def stat_file(path, busy, idle, steal):
    """Two /proc/stat first lines whose difference is `busy` user, `idle` idle, `steal` steal."""
    path.write_text(f"cpu 100 0 0 1000 0 0 0 0 0 0\ncpu {100 + busy} 0 0 {1000 + idle} 0 0 0 {steal} 0 0\n")


def check_summary(tmp):
    runs = tmp / "runs"
    runs.mkdir()
    for round_, (copy_none, copy_pause, walk_none, walk_pause) in {"1": (100, 200, 2.0, 2.0),
                                                                   "2": (120, 120, 3.0, 6.0)}.items():
        run_file(runs / f"{round_}-none.json", copy_case(copy_none) + walk_case(walk_none))
        run_file(runs / f"{round_}-pause.json", copy_case(copy_pause) + walk_case(walk_pause))
        stat_file(runs / f"{round_}-none.stat", busy=10, idle=90, steal=0)
        stat_file(runs / f"{round_}-pause.stat", busy=45, idle=50, steal=5)
    md, js = tmp / "n.md", tmp / "n.json"
    out = subprocess.run([sys.executable, str(SUMMARY), str(runs), "16", str(md), str(js), "none", "pause"],
                         capture_output=True, text=True, check=True).stdout
    text = md.read_text()
    assert out == text
    assert "| BM_Copy | none | 110.0 | - |" in text, text
    assert "| BM_Copy | pause | 160.0 | 1.00-2.00x |" in text, text
    # Milliseconds read as such: 2 and 3 ms alone, 2 and 6 ms beside.
    assert "| BM_Walk | none | 2500.0 | - |" in text, text
    assert "| BM_Walk | pause | 4000.0 | 1.00-2.00x |" in text, text
    assert "| none | 0.0, 0.0 | 10, 10 |" in text, text
    assert "| pause | 5.0, 5.0 | 45, 45 |" in text, text
    table = json.loads(js.read_text())
    assert table["BM_Copy | pause"] == {"1": 200, "2": 120}, table
    bad = subprocess.run([sys.executable, str(SUMMARY), str(runs)], capture_output=True, text=True)
    assert bad.returncode == 2 and "usage" in bad.stderr, bad


def check_busy_cpus(tmp):
    binary = tmp / "busy_cpus"
    subprocess.run(["cc", "-O2", "-pthread", "-o", str(binary), str(ROOT / "scripts" / "busy_cpus.c")], check=True)
    for args in (["0", "1", "pause"], ["2", "0", "alu"], ["2", "1", "sleep"], ["2"]):
        result = subprocess.run([str(binary), *args], capture_output=True, text=True)
        assert result.returncode == 2 and "usage" in result.stderr, (args, result)
    for kind in ("pause", "alu", "memory"):
        subprocess.run([str(binary), "2", "1", kind], check=True, timeout=30)
    # Built without -mwaitpkg, tpause is refused whatever the CPU has.
    result = subprocess.run([str(binary), "1", "1", "tpause"], capture_output=True, text=True)
    assert result.returncode == 3 and "tpause" in result.stderr, result


STAND_IN_BENCH = """#!/bin/bash
out="" repetitions=""
for a in "$@"; do
  case $a in
    --benchmark_out=*) out=${a#*=} ;;
    --benchmark_repetitions=*) repetitions=${a#*=} ;;
  esac
done
if [[ -n $out ]]; then
  sleep "${STAND_IN_SECONDS:-0.3}"
  echo '{"benchmarks":[{"name":"BM_Copy","run_name":"BM_Copy","run_type":"iteration","real_time":100,"time_unit":"us","median_us":100}]}' > "$out"
else
  echo "$CUDA_VISIBLE_DEVICES $$ $repetitions" >> "$(dirname "$0")/neighbours.log"
  exec sleep 60
fi
"""


def running(pid):
    """Whether process `pid` runs (a zombie waiting for a reaper has ended)."""
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def check_interrupted(script, out, build, env):
    """A check stopped while its neighbours copy stops them too."""
    log = build / "neighbours.log"
    log.unlink()
    run = subprocess.Popen(["bash", script, str(out), "BM_Copy", "1"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL,
                           env={**env, "MTC_NEIGHBOUR_KINDS": "copies", "STAND_IN_SECONDS": "3"})
    deadline = time.time() + 30
    while not (log.exists() and len(log.read_text().splitlines()) == 2) and time.time() < deadline:
        time.sleep(0.1)
    run.terminate()
    assert run.wait(timeout=60) != 0
    time.sleep(0.5)
    for line in log.read_text().splitlines():
        pid = line.split()[1]
        assert not running(pid), f"neighbour {pid} outlived the interrupted check"


def check_script(tmp):
    build, bin_dir, out = tmp / "build", tmp / "bin", tmp / "out"
    for d in (build, bin_dir, out):
        d.mkdir()
    bench = build / "mtc_engine_bench"
    bench.write_text(STAND_IN_BENCH)
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/bash\necho 'GPU 0'; echo 'GPU 1'; echo 'GPU 2'\n")
    for f in (bench, smi):
        f.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", MTC_BUILD_DIR=str(build),
               MTC_NEIGHBOUR_THREADS="1", MTC_NEIGHBOUR_KINDS="none copies pause")
    script = str(ROOT / "scripts" / "gpu-check-neighbours.sh")
    result = subprocess.run(["bash", script, str(out), "BM_Copy", "1"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    text = (out / "neighbours.md").read_text()
    for kind in ("none", "copies", "pause"):
        assert f"| BM_Copy | {kind} | 100.0 |" in text, text
    started = [line.split() for line in (build / "neighbours.log").read_text().splitlines()]
    # One process on each other GPU, repeating its case (the case's own minimum time governs a
    # repetition: only repetitions keep a neighbour copying).
    assert sorted(g for g, _, _ in started) == ["1", "2"], started
    assert all(int(r) >= 1000 for _, _, r in started), started
    time.sleep(0.5)
    for _, pid, _ in started:
        assert not running(pid), f"neighbour {pid} left running"
    check_interrupted(script, out, build, env)
    for bad_env, message in (({"MTC_NEIGHBOUR_KINDS": "none idle"}, "unknown kind"),
                             ({"MTC_NEIGHBOUR_THREADS": "many"}, "MTC_NEIGHBOUR_THREADS")):
        result = subprocess.run(["bash", script, str(out), "BM_Copy", "1"], env={**env, **bad_env},
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 2 and message in result.stderr, result
    result = subprocess.run(["bash", script, str(out), "BM_Copy", "0"], env=env, capture_output=True, text=True)
    assert result.returncode == 2 and "ROUNDS" in result.stderr, result


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        check_summary(tmp)
        check_busy_cpus(tmp)
        check_script(tmp)
    print("neighbours: summary, busy_cpus and the script as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
