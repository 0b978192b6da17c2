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


def report(entries, slabs=None, samples=1000, steps=None):
    """A report holding one run with (direction, pattern, strategy, gpu, median seconds) results,
    each of `samples` copies; `slabs`: the engine's pinned slab allocations, `steps`: its step
    medians (us), if given."""
    results = [{"direction": d, "pattern": p, "strategy": s, "device": g, "status": "ok",
                "samples": samples, "wall_s": {"median": m}} for d, p, s, g, m in entries]
    for e in results:
        if e["strategy"] == "engine":
            e["engine"] = {}
            if slabs is not None:
                e["engine"]["pinned_pool"] = {"slab_allocations": slabs}
            if steps is not None:
                e["engine"]["steps_median_us"] = steps
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
            ("alone", report([("h2d", "hot", "engine", 0, 100 * us), ("h2d", "hot", "to", 0, 5000 * us)], slabs=3,
                             steps={"queued": 0.5, "traverse": 80.0})),
            ("alone", report([("h2d", "hot", "engine", 0, 110 * us)], slabs=4,
                             steps={"queued": 1.5, "traverse": 90.0})),
            ("together", report([("h2d", "hot", "engine", 0, 126 * us), ("h2d", "hot", "engine", 1, 147 * us)],
                                slabs=1900)),
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
        # The spread table: each label's GPUs' ratios, every report's GPU against 105 us (alone's
        # two reports 100 and 110 us: 0.95x and 1.05x), and the step medians where given.
        spread = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")]
                  for line in done.stdout.splitlines() if line.startswith("| ") and "| h2d | hot |" in line
                  and not line.startswith("| h2d")}
        assert spread["alone"] == ["alone", "h2d", "hot", "1.00-1.00x", "0.95-1.05x", "1.0", "85.0", "-", "-"], spread
        assert spread["together"][3:5] == ["1.20-1.40x", "1.20-1.40x"], spread
        assert spread["together"][5:] == ["-", "-", "-", "-"], spread
        assert spread["procs"][3:5] == ["1.10-2.00x", "1.10-2.00x"], spread
        # A settled pool (7 allocations over 2,000 copies) passes; one allocating at almost every
        # copy (1,900 over 2,000) is flagged; reports without the figure say nothing.
        alone = next(line for line in done.stdout.splitlines() if line.startswith("- `alone`"))
        assert "7 pinned slab allocations over 2,000 timed copies (2 reports)" in alone, alone
        assert "kept allocating" not in alone, alone
        together = next(line for line in done.stdout.splitlines() if line.startswith("- `together`"))
        assert "1,900 pinned slab allocations" in together and "kept allocating" in together, together
        assert "- `procs`" not in done.stdout, done.stdout
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
