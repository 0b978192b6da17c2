"""results/bench_python.schema.json: the report scripts/bench_python.py --json writes (one quick run on
the CPU, shared by the whole file) is valid against it, by jsonschema and by scripts/check-report.py;
the schema describes every key the report writes; and it rejects a report without schema_version or
with a verdict it does not know."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed: the schema cannot be checked")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_python.py"
CHECK = ROOT / "scripts" / "check-report.py"
SCHEMA = ROOT / "results" / "bench_python.schema.json"
# mtc_again makes paired entries and verdicts; --ab-cpus 1 confines the A/B's runs wherever the
# process may use two CPUs or more, so that run_cpus holds some.
QUICK = ["--device", "cpu", "--warmup", "1", "--runs", "2", "--iters", "2", "--methods", "to,mtc,mtc_again",
         "--ab-cpus", "1"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The path of a report bench_python.py wrote."""
    path = tmp_path_factory.mktemp("bench_python") / "report.json"
    result = subprocess.run([sys.executable, str(SCRIPT), *QUICK, "--json", str(path)], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture(scope="module")
def report(written):
    return json.loads(written.read_text())


@pytest.fixture(scope="module")
def schema():
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def errors(schema, report):
    return [f"/{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in jsonschema.Draft202012Validator(schema).iter_errors(report)]


def test_the_report_is_valid(schema, report):
    assert errors(schema, report) == []
    assert report["verdicts"] and len(report["verdicts"]) == len(report["paired"])


def closed(schema):
    """`schema` with every object that lists its properties closed to others: readers must ignore
    unknown keys, so the schema itself allows them, but a key the script writes should be described."""
    schema = copy.deepcopy(schema)
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "properties" in node:
                node.setdefault("additionalProperties", False)
            stack += node.values()
        elif isinstance(node, list):
            stack += node
    return schema


def test_the_schema_describes_every_key_the_report_writes(schema, report):
    assert errors(closed(schema), report) == [], "describe these keys in results/bench_python.schema.json"


def test_a_report_without_schema_version_is_rejected(schema, report):
    broken = {key: value for key, value in report.items() if key != "schema_version"}
    assert errors(schema, broken) == ["/: 'schema_version' is a required property"]


def test_an_unknown_verdict_is_rejected(schema, report):
    broken = copy.deepcopy(report)
    broken["verdicts"][0]["verdict"] = "MAYBE"
    assert [e for e in errors(schema, broken) if e.startswith("/verdicts/0/verdict:")] != []


def check_report(*args):
    return subprocess.run([sys.executable, str(CHECK), *map(str, args)], capture_output=True, text=True, timeout=60)


def test_check_report_accepts_it_with_the_bench_python_schema(written):
    result = check_report("--schema", SCHEMA, written)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == f"{written}: ok (schema_version 1, 6 row(s), 2 verdict(s))\n"


def test_check_report_points_to_the_bench_python_schema_when_the_default_one_fails(written):
    result = check_report(written)
    assert result.returncode == 1
    assert f"{written}: a scripts/bench_python.py report? check it with --schema results/bench_python.schema.json" \
        in result.stdout
