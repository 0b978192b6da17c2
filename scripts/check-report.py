#!/usr/bin/env python3
"""Validates mtc-bench JSON reports against the shipped JSON Schema.

    python3 scripts/check-report.py report.json [more.json ...] [--schema results/report.schema.json]

Exit status: 0 when every report is valid, 1 when one is not (or cannot be read), 2 for a usage
problem (missing jsonschema package, unreadable schema). Besides the schema, NaN and Infinity
are rejected: the report promises that every number is finite.
"""
import argparse
import json
import pathlib
import sys

DEFAULT_SCHEMA = pathlib.Path(__file__).resolve().parent.parent / "results" / "report.schema.json"


def reject_constant(name):
    raise ValueError(f"non-finite number {name} (the report promises finite numbers)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="report files written by mtc-bench --json")
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
        else:
            results = sum(len(run.get("results", [])) for run in report.get("runs", []))
            print(f"{path}: ok (schema_version {report['schema_version']}, {len(report['runs'])} run(s), {results} result(s))")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
