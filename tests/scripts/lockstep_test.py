#!/usr/bin/env python3
"""mtc_lockstep_copies and scripts/lockstep_summary.py without a GPU.

Three processes meet for every iteration (the `cpu` direction: new containers only; `walk`: a
CPU->GPU copy's walk, no CUDA call); every rank copies in some iterations and one rank alone in
each of the others, in the balanced shares of the draw (per iteration, or per run of
iterations); in training steps, with the gap outside the clock. The summary's ratios on
synthetic times whose truth is known, and its refusals. Bad arguments exit 2, and a rank whose
peers never come exits 3 instead of hanging.

    python3 tests/scripts/lockstep_test.py BUILD_DIR/mtc_lockstep_copies
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUMMARY = ROOT / "scripts" / "lockstep_summary.py"


def summarize(label, paths):
    done = subprocess.run([sys.executable, str(SUMMARY), label, *map(str, paths)], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def meet(binary, tmp, name, ranks, direction, iterations, *extra, prefix):
    """Starts `ranks` processes together, waits for each to succeed, and returns their times."""
    procs = [subprocess.Popen([binary, str(r), str(ranks), name, direction, str(iterations),
                               str(tmp / f"{prefix}{r}.json"), *extra], stderr=subprocess.PIPE, text=True)
             for r in range(ranks)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    return [json.loads((tmp / f"{prefix}{r}.json").read_text()) for r in range(ranks)]


def main(binary):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        name = f"/mtc-lockstep-test-{os.getpid()}"
        runs = meet(binary, tmp, name, 3, "cpu", 120, prefix="r")
        assert not pathlib.Path("/dev/shm" + name).exists(), "rank 0 left its shared memory"
        together = len(runs[0]["all_us"])
        assert together + sum(len(r["alone_us"]) for r in runs) == 120, runs
        # Draws in cycles of 6 (every rank 3 times, each rank alone once): 60, and 20 each alone.
        assert together == 60, together
        for r in runs:
            assert len(r["all_us"]) == together and len(r["alone_us"]) == 20, r
        code, out = summarize("CPU", [tmp / f"r{r}.json" for r in range(3)])
        assert code == 0 and "3 processes: each GPU" in out, out

        # Runs of 10: who copies is drawn once per 10 iterations.
        runs = meet(binary, tmp, name, 2, "cpu", 80, "10", prefix="q")
        together = len(runs[0]["all_us"])
        assert together == len(runs[1]["all_us"]), runs
        # Two cycles of 4 runs (every rank twice, each rank alone once): 40, and 20 each alone.
        assert together == 40 and all(len(r["alone_us"]) == 20 for r in runs), runs

        # Training steps: each rank's 2 ms gap comes before its clock starts. A sample that held
        # the gap would take 2 ms at least, every one of them; a busy machine slows some copies,
        # so only the quickest of each rank's 12 is held to it. One cycle of 4 runs of 4: 8
        # together, 4 each alone.
        runs = meet(binary, tmp, name, 2, "cpu", 16, "4", "step-busy", prefix="b")
        assert all(len(r["all_us"]) == 8 and len(r["alone_us"]) == 4 for r in runs), runs
        assert all(min(r["all_us"] + r["alone_us"]) < 2000 for r in runs), runs

        # The walk of a CPU->GPU copy alone (no CUDA call, so no GPU needed).
        runs = meet(binary, tmp, name, 2, "walk", 16, "4", prefix="w")
        assert all(len(r["all_us"]) == 8 and len(r["alone_us"]) == 4 for r in runs), runs

        # Known truth: rank 0 alone 100 us, together 110; rank 1 alone 125, together 130.
        (tmp / "s0.json").write_text(json.dumps({"rank": 0, "all_us": [109, 110, 111], "alone_us": [99, 100, 101, 500]}))
        (tmp / "s1.json").write_text(json.dumps({"rank": 1, "all_us": [129, 130, 131], "alone_us": [125]}))
        code, out = summarize("CPU->GPU", [tmp / "s1.json", tmp / "s0.json"])
        assert code == 0, out
        assert ("CPU->GPU, one process per GPU, lock-stepped, 2 processes: each GPU 1.04-1.09x its own time alone "
                "(100.5-125.0 us), 1.09-1.29x GPU 0 alone (3 iterations together, 5 alone)") in out, out
        (tmp / "s1.json").write_text(json.dumps({"rank": 1, "all_us": [1, 2, 3], "alone_us": []}))
        code, out = summarize("CPU->GPU", [tmp / "s0.json", tmp / "s1.json"])
        assert code == 1 and "nothing to compare" in out, out
        (tmp / "s1.json").write_text(json.dumps({"rank": 2, "all_us": [1, 2, 3], "alone_us": [1]}))
        code, out = summarize("CPU->GPU", [tmp / "s0.json", tmp / "s1.json"])
        assert code == 1 and "not 0 to 1" in out, out

        bad = subprocess.run([binary, "3", "2", name, "cpu", "10", str(tmp / "x.json")], capture_output=True, text=True)
        assert bad.returncode == 2 and "bad arguments" in bad.stderr, bad.stderr
        bad = subprocess.run([binary, "0", "1", name, "cpu", "10", str(tmp / "x.json"), "1", "steps"],
                             capture_output=True, text=True)
        assert bad.returncode == 2 and "unknown loop pattern 'steps'" in bad.stderr, bad.stderr
        bad = subprocess.run([binary, "0", "1", name, "walk", "10", str(tmp / "x.json"), "1", "step-busy"],
                             capture_output=True, text=True)
        assert bad.returncode == 2 and "hot pattern only" in bad.stderr, bad.stderr
        alone = subprocess.run([binary, "0", "2", name, "cpu", "10", str(tmp / "x.json")], capture_output=True,
                               text=True, env={**os.environ, "MTC_LOCKSTEP_WAIT_S": "1"}, timeout=60)
        assert alone.returncode == 3 and "gave up waiting" in alone.stderr, alone.stderr
        pathlib.Path("/dev/shm" + name).unlink(missing_ok=True)
    print("lockstep: ranks meet every iteration, the summary's ratios hold, bad input exits 2, a lone rank 3")


if __name__ == "__main__":
    main(sys.argv[1])
