#!/usr/bin/env bash
# Formats the project's C++ and CUDA sources with clang-format and the repository's .clang-format,
# or, with --check, changes nothing and lists every file it would change (exit 1 if any; CI runs
# the check). Layout differs a little between clang-format releases: CI's is Debian 12's
# clang-format 14 (scripts/setup.sh installs it), and the tree is formatted with that one.
#
#   scripts/format.sh [--check] [FILE...]      # default: every *.h *.cpp *.cu *.cuh git tracks
#                                              # or would add (new files too, not ignored ones)
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [[ "${1:-}" == --check ]]; then
  check=1
  shift
fi
command -v clang-format > /dev/null || { echo "format: clang-format not found (scripts/setup.sh installs it)" >&2; exit 2; }
files=("$@")
if (( ${#files[@]} == 0 )); then
  # New files count too: a file formatted only after `git add` would fail CI's check later.
  mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.h' '*.cpp' '*.cu' '*.cuh')
fi
if (( check == 0 )); then
  clang-format -i "${files[@]}"
  exit 0
fi
unformatted=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" > /dev/null 2>&1 || unformatted+=("$f")
done
if (( ${#unformatted[@]} )); then
  echo "format: $(clang-format --version | head -1) would change ${#unformatted[@]} file(s); run scripts/format.sh:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  exit 1
fi
echo "format: ${#files[@]} files as clang-format leaves them ($(clang-format --version | head -1))"
