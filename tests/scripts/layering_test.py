"""Checks the layering of src/: every #include of a project header must go to the includer's own
component or to one the table below lets it use. Each component may use only components listed
before it, so no folder includes one above it and no two folders include each other.

The layering, bottom first (docs/method.md, "How the benchmark is put together", draws it):

  engine/include        the engine's public headers (mtc/copier.h, mtc/nvtx.h)
  engine/detail         the engine's internals
  engine                the engine's sources
  engine_plugin         the engine as a loadable library and its C interface: the public header only
  python                the Python module: the public header only
  microbench            the engine's micro-benchmarks: the engine and its internals
  bench                 errors.h and types.h: error kinds and the vocabulary (Direction, Pattern,
                        the report's schema version and status names), and files.h, the checks
                        of a file before it is read; used by every folder below
  bench/stats           pure statistics
  bench/workload        configs, specs, the workload builder and readers (detail/ counts as it)
  bench/report          the report model, its reporters and its one reader
  bench/compare         `compare`: reads reports, judges changes
  bench/runner/env      the environment and host state
  bench/runner/verify   checks a copy
  bench/runner/strategies  the ways of copying
  bench/runner/measure  rounds, stopping, the runner
  bench/runner/cli      the command line
  bench/runner/commands the subcommands: the wiring of all of the above
  app                   main()

Every bench component may use every bench component before it, the engine's public headers and
the plugin interface (engine_plugin/mtc_engine_plugin.h: how a build of the engine is loaded).
Standard library only; run from anywhere: python3 tests/scripts/layering_test.py"""

import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

BENCH = [
    "bench",
    "bench/stats",
    "bench/workload",
    "bench/report",
    "bench/compare",
    "bench/runner/env",
    "bench/runner/verify",
    "bench/runner/strategies",
    "bench/runner/measure",
    "bench/runner/cli",
    "bench/runner/commands",
    "app",
]

# Component -> the components its files may include besides its own, in layering order.
LAYERS = {
    "engine/include": [],
    "engine/detail": ["engine/include"],
    "engine": ["engine/include", "engine/detail"],
    "engine_plugin": ["engine/include"],
    "python": ["engine/include"],
    "microbench": ["engine/include", "engine/detail", "engine"],
}
for i, name in enumerate(BENCH):
    LAYERS[name] = ["engine/include", "engine_plugin"] + BENCH[:i]
ORDER = list(LAYERS)

# Where a quoted or angled include is looked for, after the includer's own folder.
INCLUDE_ROOTS = [SRC / "bench", SRC / "engine", SRC / "engine" / "include", SRC / "engine_plugin"]
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.MULTILINE)
SOURCES = {".h", ".hpp", ".cpp", ".cu", ".cuh"}


def component(path):
    """The component of a file under src/, or None for a folder the layering does not name."""
    parts = path.relative_to(SRC).parts[:-1]
    if parts[:1] == ("bench",) and len(parts) >= 2 and parts[1] == "runner":
        name = "/".join(parts[:3])
    elif parts[:1] == ("bench",):
        name = "/".join(parts[:2])
    elif parts[:1] == ("engine",):
        name = "/".join(parts[:2]) if parts[1:2] in (("include",), ("detail",)) else "engine"
    else:
        name = parts[0] if parts else ""
    return name if name in LAYERS else None


def resolve(includer, text):
    for root in [includer.parent] + INCLUDE_ROOTS:
        candidate = root / text
        if candidate.is_file():
            return candidate.resolve()
    return None  # a system, third-party or generated header


def main():
    problems = []
    for name, allowed in LAYERS.items():
        for below in allowed:
            if ORDER.index(below) >= ORDER.index(name):
                problems.append(f"the table lets {name} use {below}, which is not below it")
    checked = 0
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in SOURCES or not path.is_file():
            continue
        own = component(path)
        where = path.relative_to(SRC.parent)
        if own is None:
            problems.append(f"{where}: its folder has no place in the layering (add it here)")
            continue
        checked += 1
        for text in INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
            target = resolve(path, text)
            if target is None or SRC not in target.parents:
                continue
            other = component(target)
            if other != own and other not in LAYERS[own]:
                problems.append(f"{where}: includes {text} ({other}), which {own} may not use")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"layering: {len(problems)} problems", file=sys.stderr)
        return 1
    print(f"layering: {checked} files of src/ include only what their layer may use")
    return 0


if __name__ == "__main__":
    sys.exit(main())
