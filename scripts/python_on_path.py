"""Runs Python code in a fresh interpreter with a folder first on PYTHONPATH, outside the tree (so
that `import mtc` finds the installed module): how the build scripts check that what they built
imports (scripts/build_original.py, scripts/install_module_as.py)."""

import os
import subprocess
import sys


def run_with_path(folder, code):
    """(ok, stdout stripped, the last line of stderr or "no message") of `code` run with `folder`
    first on PYTHONPATH."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd="/", capture_output=True, text=True)
    last = (result.stderr.strip().splitlines() or ["no message"])[-1]
    return result.returncode == 0, result.stdout.strip(), last
