#!/usr/bin/env bash
# The revision a build names (report tool block, --version), from cmake/MtcGitRevision.cmake:
# checked on throwaway repositories (a commit, uncommitted changes, a new commit without a
# configure, a copy vendored inside another repository), then on the built mtc-bench.
#   tests/scripts/revision_test.sh MTC_BENCH
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bench="${1:?usage: revision_test.sh MTC_BENCH}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
revision_of() {  # the revision the script writes for source folder $1
  cmake -DSOURCE_DIR="$1" -DOUTPUT="$tmp/revision.h" -P "$root/cmake/MtcGitRevision.cmake"
  sed -n 's/^#define MTC_GIT_REVISION "\(.*\)"$/\1/p' "$tmp/revision.h"
}
expect() {  # what, got, wanted
  if [[ "$2" == "$3" ]]; then echo "ok: $1 ($2)"; else echo "FAILED: $1: got '$2', wanted '$3'"; failures=$((failures + 1)); fi
}
git_in() { git -C "$1" -c user.name=test -c user.email=test@example.com "${@:2}"; }

repo="$tmp/project"
mkdir -p "$repo/sub"
git init -q "$repo"
echo one > "$repo/file.txt"
git_in "$repo" add file.txt
git_in "$repo" commit -q -m one
expect "a clean commit" "$(revision_of "$repo")" "$(git -C "$repo" rev-parse --short HEAD)"
echo two > "$repo/file.txt"
expect "a tracked file changed" "$(revision_of "$repo")" "$(git -C "$repo" rev-parse --short HEAD)-dirty"
git_in "$repo" commit -q -am two
expect "a new commit, header rewritten" "$(revision_of "$repo")" "$(git -C "$repo" rev-parse --short HEAD)"
echo untracked > "$repo/new.txt"
expect "an untracked file is not a change" "$(revision_of "$repo")" "$(git -C "$repo" rev-parse --short HEAD)"
expect "a folder inside another repository" "$(revision_of "$repo/sub")" "unknown"
mkdir -p "$tmp/plain"
expect "no repository" "$(revision_of "$tmp/plain")" "unknown"
# MTC_REVISION names the revision of the tree being built (PROJECT_DIR), for a copy whose .git is
# not its history; another source folder, or a malformed value, leaves git's answer.
declared_of() {  # source folder $1, project folder $2, MTC_REVISION $3
  MTC_REVISION="$3" cmake -DSOURCE_DIR="$1" -DPROJECT_DIR="$2" -DOUTPUT="$tmp/revision.h" \
    -P "$root/cmake/MtcGitRevision.cmake" 2> "$tmp/declared.err"
  sed -n 's/^#define MTC_GIT_REVISION "\(.*\)"$/\1/p' "$tmp/revision.h"
}
head_of_repo="$(git -C "$repo" rev-parse --short HEAD)"
expect "MTC_REVISION for the tree being built" "$(declared_of "$repo" "$repo" 1a2b3c4-dirty)" "1a2b3c4-dirty"
expect "MTC_REVISION for another tree" "$(declared_of "$repo" "$tmp/plain" 1a2b3c4)" "$head_of_repo"
expect "a malformed MTC_REVISION" "$(declared_of "$repo" "$repo" 'a b;c')" "$head_of_repo"
expect "a malformed MTC_REVISION is named" "$(grep -c "MTC_REVISION='a b;c' ignored" "$tmp/declared.err")" 1
expect "an empty MTC_REVISION" "$(declared_of "$repo" "$repo" '')" "$head_of_repo"
revision_of "$tmp/plain" > /dev/null
before="$(stat -c %Y "$tmp/revision.h")"
sleep 1
revision_of "$tmp/plain" > /dev/null
expect "an unchanged revision leaves the header alone" "$(stat -c %Y "$tmp/revision.h")" "$before"

# The build at hand: its --version names this tree's revision as git sees it now.
if git -C "$root" rev-parse --quiet --verify HEAD > /dev/null 2>&1 &&
   [[ "$(cd "$(git -C "$root" rev-parse --show-toplevel)" && pwd -P)" == "$(cd "$root" && pwd -P)" ]]; then
  wanted="$(git -C "$root" rev-parse --short HEAD)"
  [[ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]] && wanted+="-dirty"
  version="$(sed -n 's/^project(mtc[^)]*VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
  expect "mtc-bench --version" "$("$bench" --version)" "mtc-bench $version (git $wanted)"
else
  echo "skipped: mtc-bench --version against git ($root is not the top of a git work tree)"
fi
(( failures == 0 )) || { echo "$failures revision checks failed"; exit 1; }
echo "revision checks passed"
