#!/usr/bin/env python3
"""scripts/gpu-check-python.sh with stand-ins for python3 and nvidia-smi: when the module's install
fails, nothing runs against the older mtc that may still import (no tests, no timings, no
reports), the check exits 1 and its last line says why.

    python3 tests/scripts/gpu_check_python_test.py
"""
import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "gpu-check-python.sh"

# A python3 whose pip is there but whose install fails, and whose every other call succeeds (as
# `import mtc` would with an older build installed); each call is logged.
FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$CALLS"
[[ "$1 $2 $3" == "-m pip install" ]] && { echo "error: the build failed" >&2; exit 1; }
exit 0
"""


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        fake = tmp / "bin"
        fake.mkdir()
        for name, text in (("python3", FAKE_PYTHON), ("nvidia-smi", "#!/usr/bin/env bash\necho 'NVIDIA Fake'\n")):
            (fake / name).write_text(text)
            (fake / name).chmod(0o755)
        out, calls = tmp / "out", tmp / "calls.log"
        env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}", CALLS=str(calls), MTC_ENGINE_STEP="1")
        done = subprocess.run(["bash", str(CHECK), str(out), "--runs", "3"], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=60)
        said = done.stdout + done.stderr
        assert done.returncode == 1, f"rc {done.returncode}\n{said}"
        assert done.stdout.strip().splitlines()[-1] == \
            "python: the module did NOT build or install (python-build.log): nothing run", said
        assert "error: the build failed" in (out / "python-build.log").read_text()
        ran = calls.read_text()
        assert "-m pytest" not in ran and "bench_python.py" not in ran, ran
        left = sorted(p.name for p in out.iterdir())
        assert left == ["python-build.log"], left
    print("gpu-check-python: a failed install stops the check: ok")


if __name__ == "__main__":
    main()
