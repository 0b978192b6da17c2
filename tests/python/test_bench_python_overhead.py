"""scripts/bench_python_overhead.py on the CPU, a few calls: torch's yardstick beside the module's
calls by default, none with --yardstick 0 (what the module's profile on the GPU host runs)."""

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_python_overhead.py"


@pytest.mark.parametrize("yardstick", [1, 0])
def test_the_yardstick_runs_beside_the_calls_unless_turned_off(yardstick):
    result = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--calls", "10",
                             "--yardstick", str(yardstick)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "start_copy returns" in result.stdout and "module build_us" in result.stdout
    assert ("torch: split into 528" in result.stdout) == bool(yardstick)
    assert ("no yardstick" in result.stdout) == (not yardstick)
