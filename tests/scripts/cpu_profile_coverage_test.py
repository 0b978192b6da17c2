#!/usr/bin/env python3
"""How often the sampling profiler's samples came, against how often they were asked for: the
sampler (scripts/cpu_sampler.c) records the period asked for and the CPU time it sampled, and
scripts/cpu_profile_summary.py says one sample per how many microseconds there were, and when
that is fewer than asked (the kernel checks the timer on its tick, so MTC_SAMPLE_US below the tick
buys nothing). On synthetic profiles whose truth is known, then end to end through
scripts/profile.sh on a program that spins for 0.3 s of CPU time.

    python3 tests/scripts/cpu_profile_coverage_test.py
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUMMARY = ROOT / "scripts" / "cpu_profile_summary.py"
PROFILE = ROOT / "scripts" / "profile.sh"

from cpu_profile_test import SPIN_PROGRAM  # noqa: E402 (this folder; spins for 0.3 s of CPU time)


def synthetic(tmp, name, samples, coverage_line, dropped=0):
    """A profile of `samples` identical samples of one frame (and `dropped` more the sampler could
    not keep), with the coverage header if given."""
    lines = [f"# cpu_sampler: {samples} samples, {dropped} dropped (buffer full), main thread 100"]
    if coverage_line:
        lines.append(coverage_line)
    lines.append("A 0x7f0000001000 /opt/prog 0x100 work")
    lines += ["S 100 1 0x7f0000001000"] * samples
    path = tmp / name
    path.write_text("\n".join(lines) + "\n")
    result = subprocess.run([sys.executable, str(SUMMARY), str(path)], capture_output=True, text=True)
    assert result.returncode == 0 and result.stderr == "", result
    return result.stdout


def check_synthetic(tmp):
    # 1,000 samples over 1 s: one per 1,000 us; asked every 250 us, that is fewer than asked.
    text = synthetic(tmp, "fewer", 1000, "# cpu_sampler: asked every 250 us, 1.000000 s of CPU time sampled")
    assert ("One sample per 1,000 us of the process's CPU time (1.00 s sampled), asked every 250 us: "
            "fewer than asked") in text, text
    # The same samples asked every 1,000 us: as asked, no warning.
    text = synthetic(tmp, "asked", 1000, "# cpu_sampler: asked every 1000 us, 1.000000 s of CPU time sampled")
    assert "One sample per 1,000 us of the process's CPU time (1.00 s sampled), asked every 1000 us." in text, text
    assert "fewer than asked" not in text, text
    # Samples dropped for a full buffer were taken all the same: 600 kept and 400 dropped, as 1,000.
    text = synthetic(tmp, "full", 600, "# cpu_sampler: asked every 1000 us, 1.000000 s of CPU time sampled", 400)
    assert "One sample per 1,000 us of the process's CPU time (1.00 s sampled), asked every 1000 us." in text, text
    # A profile from before the sampler recorded its coverage: summarized as before, without the line.
    text = synthetic(tmp, "old", 10, None)
    assert "10 samples from 1 threads." in text and "One sample per" not in text, text


def check_end_to_end(tmp):
    source = tmp / "spin.c"
    source.write_text(SPIN_PROGRAM)
    program = tmp / "spin"
    subprocess.run(["cc", "-O1", "-rdynamic", "-o", str(program), str(source)], check=True)
    out = tmp / "spin.md"
    env = dict(os.environ, MTC_SAMPLE_US="100")
    result = subprocess.run(["bash", str(PROFILE), str(out), "--title", "spin", "--", str(program)],
                            capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result
    text = out.read_text()
    count = re.search(r"^(\d+) samples from 1 threads\.$", text, re.M)
    line = re.search(r"^One sample per ([\d,]+) us of the process's CPU time \(([\d.]+) s sampled\), "
                     r"asked every 100 us(: fewer than asked.*|\.)$", text, re.M)
    assert count and line, text
    samples, every_us, cpu_s = int(count.group(1)), int(line.group(1).replace(",", "")), float(line.group(2))
    # The program spins for 0.3 s of CPU time; its start and exit add little.
    assert 0.29 <= cpu_s <= 1.0, text
    # The period is the CPU time over the samples (the time printed to 10 ms, the period to 1 us).
    assert samples > 0 and abs(every_us * samples / 1e6 - cpu_s) <= 0.005 + samples / 1e6, text
    # The warning comes exactly when the samples came at less than two thirds of the rate asked.
    assert (line.group(3) != ".") == (every_us > 150), text
    return every_us


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        check_synthetic(tmp)
        every_us = check_end_to_end(tmp)
    print(f"cpu profile coverage: asked every 100 us, sampled every {every_us} us of CPU time here; "
          "the summary's line on synthetic profiles as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
