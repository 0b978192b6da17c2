#!/usr/bin/env python3
"""Renders every plot of scripts/plot.py from the synthetic reports of tests/compare/data and a
comparison made from them by `mtc-bench compare`, into a temporary folder; checks that each
expected file is a PNG and that a schema v1 report is refused (exit 2).

    python3 tests/scripts/plot_test.py BUILD_DIR/mtc-bench
"""
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "compare" / "data"
PLOT = ROOT / "scripts" / "plot.py"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def check_png(path):
    data = path.read_bytes()
    if not data.startswith(PNG_SIGNATURE) or len(data) < 1000:
        raise AssertionError(f"{path} is not a PNG of any substance ({len(data)} bytes)")


def main():
    mtc_bench = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp)
        compare_json = out / "ab-compare.json"
        rc = subprocess.run([mtc_bench, "compare", DATA / "ab" / "baseline", DATA / "ab" / "candidate", "--json",
                             compare_json], stdout=subprocess.DEVNULL).returncode
        assert rc == 1, f"compare of the slower A/B fixture should exit 1, got {rc}"
        assert json.loads(compare_json.read_text())["counts"]["SLOWER"] > 0
        subprocess.run([sys.executable, PLOT, DATA / "base.json", DATA / "sweep.json", compare_json, "--out", out],
                       check=True, stdout=subprocess.DEVNULL)
        expected = ["base-medians.png", "base-steps.png", "sweep-medians.png", "sweep-sweep.png",
                    "ab-compare-compare.png"]
        for name in expected:
            check_png(out / name)
        assert not (out / "base-sweep.png").exists(), "a report of one sweep point has no sweep plot"
        refused = subprocess.run([sys.executable, PLOT, DATA / "v1.json", "--out", out], stderr=subprocess.PIPE,
                                 text=True)
        assert refused.returncode == 2 and "schema_version 1" in refused.stderr, refused.stderr
        print(f"plot_test: ok ({len(expected)} PNG files)")


if __name__ == "__main__":
    main()
