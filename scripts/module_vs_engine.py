#!/usr/bin/env python3
"""The Python module's step beside the C++ engine's, from one call's two reports: how much the
module's own layer adds to a training step's copy.

    python3 scripts/module_vs_engine.py BENCH_PYTHON.json ENGINE_BENCH.json [--md OUT.md]

BENCH_PYTHON.json is scripts/bench_python.py's report (its `mtc` row of the step pattern);
ENGINE_BENCH.json is mtc_engine_bench's Google Benchmark JSON holding the medians of
BM_EngineCopy<Direction::kHostToDevice>/1/399 (the engine's step after a sleep) and, when present,
/1/1423 (after a busy gap). The module's step is taken twice: as bench_python times it, closed by a
device synchronize, and without that synchronize (`without_synchronize`), where get() has returned
with the data on the target and where the engine's benchmark ends a copy. After a step's gap the
synchronize costs 40-55 us with nothing to wait for (bench_python's yardstick), which the engine's
figure never pays: the second ratio sets like beside like. The gaps differ too (bench_python
sleeps 2 ms, BM_EngineCopy 5 ms); the lines say so.

Exit codes: 0 printed; 2 a report that cannot be read or lacks what the comparison needs, or an
--md file that cannot be written.
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gbench_units import medians_of  # noqa: E402

ENGINE_CASES = {"399": "the engine's step after a 5 ms sleep (BM_EngineCopy 399)",
                "1423": "the engine's step after a 5 ms busy gap (BM_EngineCopy 1423)"}
PREFIX = "BM_EngineCopy<Direction::kHostToDevice>/1/"


class Unusable(Exception):
    pass


def load(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise Unusable(f"{path}: cannot be read as JSON ({error})") from None


def module_step_us(report, path):
    """The module's step medians (us): as timed, and without the closing synchronize (None in
    reports from before it was timed)."""
    for row in report.get("rows", []):
        if row.get("pattern") == "step" and row.get("method") == "mtc":
            phases = row.get("phases_median_s") or {}
            without = phases.get("without_synchronize")
            median = (row.get("time") or {}).get("median_s")
            if not isinstance(median, (int, float)) or median <= 0:
                raise Unusable(f"{path}: the step row of mtc has no median time")
            return median * 1e6, None if without is None else without * 1e6
    raise Unusable(f"{path}: no step row of mtc (bench_python.py --methods must include mtc)")


def engine_step_us(bench, path):
    """{case: median us} of the engine's step cases present (gbench_units.medians_of); a case's
    name, as Google Benchmark writes it, goes on after the case (`/iterations:100/manual_time`)."""
    medians = medians_of(bench) if "benchmarks" in bench else {}
    found = {case: us for name, us in medians.items() for case in ENGINE_CASES
             if (name == PREFIX + case or name.startswith(PREFIX + case + "/")) and us > 0}
    if "399" not in found:
        errors = sorted({entry.get("error_message", "an error") for entry in bench.get("benchmarks", [])
                         if entry.get("error_occurred") and entry.get("name", "").startswith(PREFIX)})
        why = f"it failed: {'; '.join(errors)}" if errors else "run mtc_engine_bench with that filter"
        raise Unusable(f"{path}: no median of {PREFIX}399 ({why})")
    return found


def lines(bench_python, engine):
    module, without = module_step_us(*bench_python)
    cases = engine_step_us(*engine)
    out = []
    for case, what in ENGINE_CASES.items():
        if case not in cases:
            continue
        line = f"module's step {module:.1f} us (bench_python, a 2 ms sleep) over {what} {cases[case]:.1f} us: " \
               f"{module / cases[case]:.2f}x"
        if without is not None:
            line += f"; without its closing synchronize {without:.1f} us: {without / cases[case]:.2f}x"
        out.append(line)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench_python", help="scripts/bench_python.py --json's report")
    parser.add_argument("engine_bench", help="mtc_engine_bench's --benchmark_out JSON")
    parser.add_argument("--md", type=Path, help="also append the lines to this Markdown file")
    args = parser.parse_args(argv)
    try:
        out = lines((load(args.bench_python), args.bench_python), (load(args.engine_bench), args.engine_bench))
    except Unusable as error:
        print(f"module_vs_engine.py: {error}", file=sys.stderr)
        return 2
    text = "\n".join(out) + "\n"
    print(text, end="")
    if args.md:
        try:
            with open(args.md, "a", encoding="utf-8") as f:
                f.write("\n" + text)
        except OSError as error:
            print(f"module_vs_engine.py: --md {args.md}: {error.strerror or error}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
