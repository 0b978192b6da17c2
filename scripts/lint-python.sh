#!/usr/bin/env bash
# Checks the project's Python (every *.py git tracks or would add) with ruff, the version
# scripts/setup.sh pins, and the rules in pyproject.toml: names that are never defined or never
# used, syntax errors, statements that do nothing. CI runs it; exit 1 lists every finding, exit 2
# when ruff is missing.
#
#   scripts/lint-python.sh [FILE...]      # default: every *.py tracked or new, not ignored
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
ruff="$MTC_VENV/bin/ruff"
[[ -x "$ruff" ]] || ruff="$(command -v ruff || true)"
[[ -n "$ruff" ]] || { echo "lint-python: ruff not found (scripts/setup.sh installs it into $MTC_VENV)" >&2; exit 2; }
files=("$@")
if (( ${#files[@]} == 0 )); then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.py')
fi
# No cache: the check runs once per clone, and a cache folder would only need ignoring.
if "$ruff" check --no-cache --quiet "${files[@]}"; then
  echo "lint-python: ${#files[@]} files clean ($("$ruff" --version))"
else
  echo "lint-python: findings above; fix them, or mark a deliberate one with '# noqa: CODE (why)'" >&2
  exit 1
fi
