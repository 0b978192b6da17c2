#!/usr/bin/env python3
"""scripts/multi_gpu_summary.py on synthetic reports whose ratios are known: per-GPU medians over
a label's reports, each against one GPU alone, and the refusals (exit 2).

    python3 tests/scripts/multi_gpu_summary_test.py
"""
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUMMARY = ROOT / "scripts" / "multi_gpu_summary.py"


def report(entries):
    """A report holding one run with (direction, pattern, strategy, gpu, median seconds) results."""
    results = [{"direction": d, "pattern": p, "strategy": s, "device": g, "status": "ok",
                "wall_s": {"median": m}} for d, p, s, g, m in entries]
    results.append({"direction": "h2d", "pattern": "hot", "strategy": "engine", "device": 0,
                    "status": "skipped", "wall_s": {"median": 1.0}})  # not counted
    return {"schema_version": 2, "runs": [{"results": results}]}


def run(tmp, reports, *extra):
    pairs = []
    for i, (label, doc) in enumerate(reports):
        path = tmp / f"r{i}.json"
        path.write_text(json.dumps(doc))
        pairs.append(f"{label}={path}")
    return subprocess.run([sys.executable, SUMMARY, *pairs, *extra], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as name:
        tmp = pathlib.Path(name)
        us = 1e-6
        reports = [
            ("alone", report([("h2d", "hot", "engine", 0, 100 * us), ("h2d", "hot", "to", 0, 5000 * us)])),
            ("alone", report([("h2d", "hot", "engine", 0, 110 * us)])),
            ("together", report([("h2d", "hot", "engine", 0, 126 * us), ("h2d", "hot", "engine", 1, 147 * us)])),
            ("procs", report([("h2d", "hot", "engine", 0, 115.5 * us)])),
            ("procs", report([("h2d", "hot", "engine", 1, 210 * us)])),
        ]
        md = tmp / "out.md"
        done = run(tmp, reports, "--md", str(md))
        assert done.returncode == 0, done.stderr
        rows = [line for line in done.stdout.splitlines() if line.startswith("| h2d")]
        # alone: the median of 100 and 110 us; every ratio is against 105 us.
        expected = [("alone", "0", "105.0 us", "1.00x", "2"), ("together", "0", "126.0 us", "1.20x", "1"),
                    ("together", "1", "147.0 us", "1.40x", "1"), ("procs", "0", "115.5 us", "1.10x", "1"),
                    ("procs", "1", "210.0 us", "2.00x", "1")]
        assert len(rows) == len(expected), done.stdout
        for row, (label, gpu, median, ratio, reps) in zip(rows, expected):
            cells = [c.strip() for c in row.strip("|").split("|")]
            assert cells == ["h2d", "hot", label, gpu, median, ratio, reps], (cells, row)
        assert md.read_text() == done.stdout
        to = run(tmp, reports, "--strategy", "to")
        assert to.returncode == 0 and "5,000.0 us" in to.stdout, to.stdout
        missing = run(tmp, reports[2:])
        assert missing.returncode == 2 and "alone" in missing.stderr, missing.stderr
        bad = subprocess.run([sys.executable, SUMMARY, "no-label.json"], capture_output=True, text=True)
        assert bad.returncode == 2 and "LABEL=REPORT.json" in bad.stderr, bad.stderr
        unreadable = subprocess.run([sys.executable, SUMMARY, f"alone={tmp / 'absent.json'}"], capture_output=True,
                                    text=True)
        assert unreadable.returncode == 2, unreadable.stderr
        print(f"multi_gpu_summary_test: ok ({len(expected)} rows)")


if __name__ == "__main__":
    main()
