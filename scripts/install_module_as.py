#!/usr/bin/env python3
"""Builds the Python module of another source tree of this project and installs it under another
package name, beside the installed mtc: the baseline of an A/B of the module in one process
(`bench_python.py --baseline NAME` times it interleaved with mtc, sample by sample, so that both
builds see the same moments of a host whose speed changes within seconds).

    python3 scripts/install_module_as.py SRC OUT NAME

SRC is the tree (e.g. `git archive` of the commit before a change, unpacked); OUT a folder to
install into (put it on PYTHONPATH afterwards); NAME the package's name there (not mtc). The
module is built by SRC's own setup.py, with pip and the torch already installed, in OUT/build-NAME.
A tree older than the module's local types and relative imports (2026-12-06) builds but cannot be
imported beside mtc: the check at the end says so.

Exit codes: 0 installed, and it imports beside mtc; 1 the build or that import failed; 2 bad
arguments.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from python_on_path import run_with_path  # noqa: E402


def fail(message, code):
    print(f"install_module_as.py: {message}", file=sys.stderr)
    return code


def check_arguments(src, name):
    """None, or what is wrong with SRC and NAME."""
    if not (src / "setup.py").is_file() or not (src / "src/python/mtc/__init__.py").is_file():
        return f"{src} is not a source tree of this project (no setup.py and src/python/mtc/__init__.py)"
    if not name.isidentifier() or name == "mtc":
        return f"NAME must be a Python identifier other than mtc, got '{name}'"
    return None


def built_from_elsewhere(build_dir, src):
    """Whether `build_dir` holds a CMake cache for a source tree other than `src`."""
    cache = build_dir / "CMakeCache.txt"
    if not cache.is_file():
        return False
    for line in cache.read_text(errors="replace").splitlines():
        if line.startswith("CMAKE_HOME_DIRECTORY:"):
            return Path(line.partition("=")[2]).resolve() != src
    return False


def main(argv):
    if argv in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if len(argv) != 3:
        return fail("usage: python3 scripts/install_module_as.py SRC OUT NAME", 2)
    src, out, name = Path(argv[0]).resolve(), Path(argv[1]).resolve(), argv[2]
    problem = check_arguments(src, name)
    if problem:
        return fail(problem, 2)
    out.mkdir(parents=True, exist_ok=True)
    build_dir = out / f"build-{name}"
    if built_from_elsewhere(build_dir, src):
        # CMake refuses a build folder configured for another source tree: a second A/B on the
        # same host, against another baseline, would fail there.
        print(f"install_module_as.py: {build_dir} was built from another tree; starting it afresh")
        shutil.rmtree(build_dir)
    env = dict(os.environ, MTC_PYTHON_BUILD_DIR=str(build_dir))
    with tempfile.TemporaryDirectory(dir=out) as staging:
        build = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                                "--disable-pip-version-check", "--target", staging, str(src)], env=env)
        if build.returncode != 0:
            return fail(f"pip could not build {src}'s module (its output is above)", 1)
        target = out / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.move(str(Path(staging) / "mtc"), str(target))
    # Both, in one process, each with its own extension: what an A/B in one process needs.
    check = ("import sys, mtc, {0}; "
             "assert {0}._C.__file__.startswith({1!r}), {0}._C.__file__; "
             "assert mtc._C.__file__ != {0}._C.__file__; print({0}.__file__)").format(name, str(out))
    ok, printed, last = run_with_path(out, check)
    if not ok:
        return fail(f"built, but {name} does not import beside mtc: {last}", 1)
    print(f"installed {src}'s module as {name} in {out} ({printed}); put {out} on PYTHONPATH")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
