"""scripts/bench_python.py --original: the original package timed beside mtc when it can be
imported, a clear message and exit code 3 when it cannot (CPU target, a few calls)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_python.py"
QUICK = ["--device", "cpu", "--warmup", "1", "--runs", "2", "--iters", "2"]


def run(args, **env):
    return subprocess.run([sys.executable, str(SCRIPT), *QUICK, *args], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, **env))


def test_original_that_cannot_be_imported_exits_3_saying_so(tmp_path):
    result = run(["--original"], PYTHONPATH=str(tmp_path))
    assert result.returncode == 3, result.stderr
    assert "cannot import accvlab.multi_tensor_copier" in result.stderr
    assert "docs/python.md" in result.stderr and result.stdout == ""


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
    rows = json.loads(report.read_text())["rows"]
    methods = {(row["pattern"], row["method"]) for row in rows}
    assert {("protocol", "original"), ("step", "original"), ("protocol", "mtc")} <= methods
    assert all(row["verified"] for row in rows)
    assert "| protocol | original |" in result.stdout
