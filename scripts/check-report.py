#!/usr/bin/env python3
"""Validates JSON reports against a shipped JSON Schema: mtc-bench's, or bench_python.py's with --schema.

    python3 scripts/check-report.py report.json [more.json ...] [--schema results/report.schema.json]
    python3 scripts/check-report.py bench_python.json --schema results/bench_python.schema.json

Exit status: 0 when every report is valid, 1 when one is not (or cannot be read), 2 for a usage
problem (missing jsonschema package, unreadable schema). Besides the schema, NaN and Infinity
are rejected: mtc-bench's report promises that every number is finite, and in bench_python.py's
one would stand for a broken measurement.
"""
import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_SCHEMA = ROOT / "results" / "report.schema.json"
BENCH_PYTHON_SCHEMA = ROOT / "results" / "bench_python.schema.json"


def reject_constant(name):
    raise ValueError(f"non-finite number {name} (a report holds finite numbers only)")


def summary(report):
    """What a valid report holds, in a few words, for either schema's shape."""
    if not isinstance(report, dict):  # another --schema's
        return "valid"
    words = [f"schema_version {report.get('schema_version')}"]
    if isinstance(report.get("runs"), list):  # mtc-bench's
        results = sum(len(run.get("results", [])) for run in report["runs"])
        words += [f"{len(report['runs'])} run(s)", f"{results} result(s)"]
    if isinstance(report.get("rows"), list):  # bench_python.py's
        words += [f"{len(report['rows'])} row(s)", f"{len(report.get('verdicts', []))} verdict(s)"]
    return ", ".join(words)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+",
                        help="report files written by mtc-bench --json (or by scripts/bench_python.py --json, "
                        f"with --schema {BENCH_PYTHON_SCHEMA.relative_to(ROOT)})")
    parser.add_argument("--schema", default=str(DEFAULT_SCHEMA), help="JSON Schema (default: %(default)s)")
    args = parser.parse_args()

    try:
        import jsonschema
    except ImportError:
        print("check-report: the Python package 'jsonschema' is missing (pip install jsonschema)", file=sys.stderr)
        return 2
    try:
        with open(args.schema, encoding="utf-8") as f:
            schema = json.load(f)
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        print(f"check-report: bad schema {args.schema}: {e}", file=sys.stderr)
        return 2
    validator = validator_class(schema)

    failures = 0
    for path in args.reports:
        try:
            with open(path, encoding="utf-8") as f:
                report = json.load(f, parse_constant=reject_constant)
        except (OSError, ValueError) as e:
            print(f"{path}: {e}")
            failures += 1
            continue
        errors = sorted(validator.iter_errors(report), key=lambda e: list(map(str, e.absolute_path)))
        for error in errors[:20]:
            where = "/" + "/".join(str(p) for p in error.absolute_path)
            print(f"{path}: {where}: {error.message}")
        if len(errors) > 20:
            print(f"{path}: ... and {len(errors) - 20} more")
        if errors:
            failures += 1
            # The default schema's errors on a bench_python.py report say every mtc-bench key is missing.
            default = pathlib.Path(args.schema).resolve() == DEFAULT_SCHEMA
            if default and isinstance(report, dict) and "rows" in report and "runs" not in report:
                print(f"{path}: a scripts/bench_python.py report? check it with --schema "
                      f"{BENCH_PYTHON_SCHEMA.relative_to(ROOT)}")
        else:
            print(f"{path}: ok ({summary(report)})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
