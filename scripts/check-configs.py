#!/usr/bin/env python3
"""Validates every configs/*.json against configs/spec.schema.json (JSON Schema 2020-12).

Also checks that each config names the schema ("$schema": "./spec.schema.json") so editors
validate it too. Exits 1 on the first run with any failure, listing all of them.

    python3 scripts/check-configs.py [CONFIG.json ...]     # default: every config in configs/
"""

import json
import pathlib
import sys

try:
    import jsonschema
except ImportError:
    sys.exit("check-configs: the 'jsonschema' package is missing (pip install jsonschema)")

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"
SCHEMA = CONFIGS / "spec.schema.json"
SCHEMA_REF = "./" + SCHEMA.name


def pointer(path):
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path)


def check(validator, path):
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return [f"{path}: cannot read: {error}"]
    problems = []
    if not isinstance(config, dict) or config.get("$schema") != SCHEMA_REF:
        problems.append(f'{path}: "$schema" must be "{SCHEMA_REF}"')
    for error in sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path)):
        # anyOf/oneOf failures are vague at the top; the deepest sub-error says what is wrong.
        best = jsonschema.exceptions.best_match([error])
        problems.append(f"{path}: {pointer(best.absolute_path)}: {best.message}")
    return problems


def main(argv):
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    paths = [pathlib.Path(a) for a in argv] or sorted(p for p in CONFIGS.glob("*.json") if p != SCHEMA)
    if not paths:
        print("check-configs: no configs found", file=sys.stderr)
        return 1
    problems = [problem for path in paths for problem in check(validator, path)]
    for problem in problems:
        print(problem, file=sys.stderr)
    for path in paths:
        print(f"{'FAIL' if any(p.startswith(str(path) + ':') for p in problems) else 'ok  '} {path}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
