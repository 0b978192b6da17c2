#!/usr/bin/env python3
"""scripts/gpu-check-nsys.sh and scripts/nsys_summary.py with stand-ins for nsys and the engine's
micro-benchmarks: each filter runs in a process of its own under `nsys profile`, its heading,
its own result line and its CSV summaries as tables follow in order (the busiest rows first,
counts per copy from the mtc:start_copy range), every CSV lands in the tarball, and a case nsys
could not profile is named and fails the check while the others still run. gpu-check.sh refuses
an unknown mode, and an nsys mode without filters or with more than five, before building. nsys_summary.py alone: the column of counts per copy from --copies,
none without copies, and exit 2 for a file of no known kind or without the columns.

    python3 tests/scripts/nsys_check_test.py
"""
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "gpu-check-nsys.sh"
SUMMARY = ROOT / "scripts" / "nsys_summary.py"

HEAD_CALLS = "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name"
HEAD_NVTX = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range"
CUDA = [HEAD_CALLS,
        "10.0,2000000,110,18181.8,17000.0,9000,40000,100.0,cudaEventRecord",
        "80.0,9000000,440,20454.5,32600.0,7900,181000,100.0,cudaMemcpyAsync",
        "5.0,900000,1,900000.0,900000.0,900000,900000,0.0,cudaHostAlloc"]
NVTX = [HEAD_NVTX,
        "50.0,30000000,110,272727.3,270000.0,200000,400000,100.0,PushPop,mtc:copy job",
        "1.0,1100000,110,10000.0,9000.0,5000,20000,100.0,PushPop,mtc:start_copy"]
OSRT = [HEAD_CALLS, "40.0,5000000,100,50000.0,46500.0,1000,149000,100.0,pthread_rwlock_wrlock"]

# `profile ... -o PREFIX -f true COMMAND...` runs COMMAND and leaves PREFIX.nsys-rep; `stats -r ...
# --format csv -o PREFIX REPORT` writes PREFIX_<report>.csv. A filter containing "broken" makes
# `profile` fail, as a process that crashed under nsys would.
FAKE_NSYS = f"""#!/usr/bin/env bash
verb="$1"; shift
prefix=""; cmd=()
while (( $# )); do
  case "$1" in
    -o) prefix="$2"; shift 2 ;;
    -t|-f|-r|--format) shift 2 ;;
    *) cmd+=("$1"); shift ;;
  esac
done
if [[ "$verb" == profile ]]; then
  [[ "${{cmd[*]}}" == *broken* ]] && {{ echo "fake nsys: the process crashed"; exit 1; }}
  "${{cmd[@]}}" || exit 1
  touch "$prefix.nsys-rep"
  exit 0
fi
printf '%s\\n' {' '.join(repr(line) for line in CUDA)} > "${{prefix}}_cuda_api_sum.csv"
printf '%s\\n' {' '.join(repr(line) for line in NVTX)} > "${{prefix}}_nvtx_sum.csv"
printf '%s\\n' {' '.join(repr(line) for line in OSRT)} > "${{prefix}}_osrt_sum.csv"
printf 'Start (ns),Duration (ns),Name\\n1,2,gather\\n' > "${{prefix}}_cuda_gpu_trace.csv"
"""
# Prints its case's line, naming the filter it was given.
FAKE_BENCH = """#!/usr/bin/env bash
echo "BM_Fake ${1#--benchmark_filter=} 300 us"
"""


def write(path, text, executable=False):
    path.write_text(text)
    if executable:
        path.chmod(0o755)


def check_the_check(tmp):
    tmp = pathlib.Path(tmp)
    build, out = tmp / "build", tmp / "out"
    build.mkdir()
    out.mkdir()
    write(tmp / "nsys", FAKE_NSYS, executable=True)
    write(build / "mtc_engine_bench", FAKE_BENCH, executable=True)
    env = dict(os.environ, MTC_NSYS=str(tmp / "nsys"), MTC_PYTHON=sys.executable)
    done = subprocess.run(["bash", str(CHECK), str(out), str(build), "BM_Fake/1/399/", "broken/",
                           "BM_Fake/1/1423/"], capture_output=True, text=True, env=env)
    assert done.returncode == 1, f"a case nsys could not profile must fail the check\n{done.stdout}{done.stderr}"
    md = (out / "nsys.md").read_text()
    assert "nsys profile failed (or ran past 120 s) for broken/" in md, md  # 360 s over 3 cases
    assert "the process crashed" in md, md
    # Each case's heading, then its own line, then its tables, in the filters' order.
    at = [md.index(text) for text in ("### BM_Fake/1/399/", "BM_Fake BM_Fake/1/399/ 300 us",
                                      "| cudaMemcpyAsync |", "### broken/", "nsys profile failed",
                                      "### BM_Fake/1/1423/", "BM_Fake BM_Fake/1/1423/ 300 us")]
    assert at == sorted(at), f"out of order: {at}\n{md}"
    assert md.count("| cudaMemcpyAsync |") == 2, md
    # The busiest first; 440 calls over 110 copies is 4 a copy.
    assert md.index("| cudaMemcpyAsync | 440 | 4.00 | 32.6 |") < md.index("| cudaEventRecord |"), md
    assert "| pthread_rwlock_wrlock | 100 | 0.91 | 46.5 |" in md, md
    with tarfile.open(out / "nsys-csv.tar.gz") as tar:
        names = sorted(pathlib.Path(n).name for n in tar.getnames())
    assert names.count("case-1_cuda_api_sum.csv") == 1 and "case-3_cuda_gpu_trace.csv" in names, names
    assert not any(n.startswith("case-2_") for n in names), names


def check_the_refusals(tmp):
    """gpu-check.sh refuses an unknown mode, an nsys mode without filters or with more than five,
    and an A/B baseline (MTC_AB_BASE) that is not a folder, before it builds anything."""
    out = pathlib.Path(tmp) / "out"
    no_base = {"MTC_AB_BASE": str(pathlib.Path(tmp) / "no-such-tree")}
    for env, args, said in (({}, ["typo"], "unknown mode"), ({}, ["nsys"], "at most five"),
                            ({}, ["nsys"] + [f"F{k}" for k in range(6)], "at most five"),
                            (no_base, ["python"], "MTC_AB_BASE is not a folder"),
                            (no_base, ["ab", "1"], "MTC_AB_BASE is not a folder")):
        done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu-check.sh"), str(out), *args],
                              capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, **env))
        assert done.returncode == 2, f"{args}: rc {done.returncode}\n{done.stdout}{done.stderr}"
        assert said in done.stderr, done.stderr
        assert not (out / "build.log").exists() and not (out / "python-build.log").exists(), \
            f"{args}: it started a build"


def check_the_summary(tmp):
    tmp = pathlib.Path(tmp)
    write(tmp / "a_cuda_api_sum.csv", "\n".join(CUDA) + "\n")

    def run(*args):
        return subprocess.run([sys.executable, str(SUMMARY), *map(str, args)], capture_output=True, text=True)

    done = run("--copies", 220, tmp / "a_cuda_api_sum.csv")
    assert done.returncode == 0 and "| cudaMemcpyAsync | 440 | 2.00 |" in done.stdout, done.stdout
    done = run(tmp / "a_cuda_api_sum.csv")
    assert done.returncode == 0 and "per copy" not in done.stdout and "| cudaMemcpyAsync | 440 | 32.6 |" in done.stdout, done.stdout
    write(tmp / "b.csv", "\n".join(CUDA) + "\n")
    assert run(tmp / "b.csv").returncode == 2
    write(tmp / "c_osrt_sum.csv", "Name,Calls\nx,1\n")
    done = run(tmp / "c_osrt_sum.csv")
    assert done.returncode == 2 and "expected the columns" in done.stderr, done.stderr


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_the_check(tmp)
    with tempfile.TemporaryDirectory() as tmp:
        check_the_refusals(tmp)
    with tempfile.TemporaryDirectory() as tmp:
        check_the_summary(tmp)
    print("nsys check and summary: ok")


if __name__ == "__main__":
    main()
