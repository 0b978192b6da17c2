#!/usr/bin/env bash
# The CI performance job: measures a candidate revision against a baseline on one machine and
# judges every case with `mtc-bench compare`.
#
#   scripts/perf-ci.sh BASE_REF [CANDIDATE_REF]
#
# BASE_REF and CANDIDATE_REF are git revisions (checked out as worktrees under the work folder)
# or source folders used as they are (for a machine without the git history, e.g. a copy made
# with `git archive`). CANDIDATE_REF defaults to this working tree, uncommitted changes included.
#
# Two modes (MTC_PERF_MODE):
#   in-process (default), for a change to the engine: builds the candidate's mtc-bench with its
#     engine as a loadable library, and the baseline's engine as a library too
#     (src/engine_plugin/standalone: the candidate's adapter over the baseline's mtc/copier.h),
#     then runs the candidate's mtc-bench once per CI case with --engine-lib base=LIB and
#     cand=LIB, measuring `engine@cand` and `engine@base` sample by sample. Both builds are loaded
#     alike and see the same host at the same moments, so their per-round ratio is free of the
#     host's drift. Each process draws its own code layout and thread placement, which can favour
#     one build by a percent or two for its whole life: the job runs several short processes
#     (MTC_PERF_PROCESSES), the first also measuring the case's other strategies (`to`,
#     `memcpy_batch`, the linked `engine`) for context, and `mtc-bench compare` of the reports
#     alone pairs the builds by round, with an interval over the processes too.
#   processes, for a change outside the engine (runner, strategies): builds both mtc-bench
#     binaries and for R rounds runs every CI case with each, in a side order drawn per round
#     from the job's name, each run labelled `--ab-label JOB:SIDE:R`; compare pairs them by round.
#
# Writes to the output folder: the reports (in-process/, or baseline/ and candidate/),
# summary.md (also appended to $GITHUB_STEP_SUMMARY when set) and compare.json, and exits with
# compare's code (0 pass, 1 a case matched the fail-on rule, 2 bad input, or no GPU outside smoke
# mode) or 3 when a build or a run failed.
#
# Environment:
#   MTC_PERF_MODE       in-process (default) or processes
#   MTC_PERF_ROUNDS     rounds (in-process: per process, default 4; processes mode: default 6;
#                       3 in smoke mode)
#   MTC_PERF_ROUND_TIME in-process: seconds of samples per case and round (default 0.1)
#   MTC_PERF_PROCESSES  in-process: processes per case, pooled by compare (default 12; 2 in smoke
#                       mode)
#   MTC_PERF_ROUND_CPUS in-process: mtc-bench --round-cpus, the CPUs every round is confined to,
#                       drawn per round, so both builds' threads share their speed (default 4
#                       on a machine with more than 4 CPUs for this process, else 0: confined to
#                       all of them, a round would be confined to nothing; 0 turns it off)
#   MTC_PERF_OUT        output folder (default .perf-ci/out)
#   MTC_PERF_WORK       worktrees and build folders (default .perf-ci)
#   MTC_PERF_JOB        the job's name (default perf-<UTC time>-<pid>)
#   MTC_PERF_FAIL_ON    slower (default; none in smoke mode), faster, any or none
#   MTC_PERF_COMPARE_ARGS  more compare options, e.g. "--threshold 3"
#   MTC_PERF_BENCH_ARGS    more mtc-bench options for every run
#   MTC_PERF_SMOKE=1    CPU smoke mode: the h2h direction, 3 rounds (for CI without a GPU)
#   MTC_PERF_CANDIDATE_BUILD  an existing build folder of the working tree to reuse as the
#                       candidate's (only when CANDIDATE_REF is not given)
#   MTC_CMAKE_ARGS      extra CMake configure options for every build
#   MTC_WERROR          passed to every build as scripts/build.sh passes it (CI sets it)
#   MTC_JOBS            build parallelism (default: all cores)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
if [[ $# -lt 1 || $# -gt 2 || "$1" == -h || "$1" == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
fi
source scripts/env.sh

smoke="${MTC_PERF_SMOKE:-0}"
mode="${MTC_PERF_MODE:-in-process}"
[[ "$mode" == in-process || "$mode" == processes ]] ||
  { echo "perf-ci: MTC_PERF_MODE must be in-process or processes" >&2; exit 2; }
default_rounds=$([[ "$mode" == in-process ]] && echo 4 || echo 6)
rounds="${MTC_PERF_ROUNDS:-$([[ "$smoke" == 1 ]] && echo 3 || echo "$default_rounds")}"
round_time="${MTC_PERF_ROUND_TIME:-0.1}"
processes="${MTC_PERF_PROCESSES:-$([[ "$smoke" == 1 ]] && echo 2 || echo 12)}"
round_cpus="${MTC_PERF_ROUND_CPUS:-$(( $(nproc) > 4 ? 4 : 0 ))}"
work="$(mkdir -p "${MTC_PERF_WORK:-.perf-ci}" && cd "${MTC_PERF_WORK:-.perf-ci}" && pwd)"
out="${MTC_PERF_OUT:-$work/out}"
job="${MTC_PERF_JOB:-perf-$(date -u +%Y%m%dT%H%M%SZ)-$$}"
# A smoke job checks that the job runs end to end: 3 rounds of CPU copies on a shared runner cannot
# judge a change (docs/ci.md: with the same build on both sides, 2 of 40 such jobs called a case
# SLOWER), so its verdicts are shown, not enforced, unless MTC_PERF_FAIL_ON asks.
fail_on="${MTC_PERF_FAIL_ON:-$([[ "$smoke" == 1 ]] && echo none || echo slower)}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "perf-ci: MTC_PERF_ROUNDS must be a positive integer" >&2; exit 2; }
[[ "$processes" =~ ^[1-9][0-9]*$ ]] || { echo "perf-ci: MTC_PERF_PROCESSES must be a positive integer" >&2; exit 2; }
[[ "$round_cpus" =~ ^[0-9]+$ ]] || { echo "perf-ci: MTC_PERF_ROUND_CPUS must be a non-negative integer" >&2; exit 2; }
# Checked here, not by the first mtc-bench run minutes of builds later (there a bad round time
# failed the run, exit 3, "a build or run failed"; a bad fail-on only the last compare).
[[ "$round_time" =~ ^([0-9]+([.][0-9]*)?|[.][0-9]+)$ ]] && awk -v t="$round_time" 'BEGIN { exit !(t > 0 && t <= 86400) }' ||
  { echo "perf-ci: MTC_PERF_ROUND_TIME must be seconds above 0 and at most 86400, not '$round_time'" >&2; exit 2; }
[[ "$fail_on" =~ ^(slower|faster|any|none)$ ]] ||
  { echo "perf-ci: MTC_PERF_FAIL_ON must be slower, faster, any or none, not '$fail_on'" >&2; exit 2; }

# The real job measures GPU copies: on a runner without a GPU it stops here, before minutes of
# builds (the cases name their directions too, so mtc-bench would refuse them with exit 2).
if [[ "$smoke" != 1 ]] && ! compgen -G '/dev/nvidia[0-9]*' > /dev/null; then
  echo "perf-ci: no GPU on this machine (no /dev/nvidia<N>); MTC_PERF_SMOKE=1 runs the CPU smoke job" >&2
  exit 2
fi

# The shipped CI cases (configs/ci/cases): one mtc-bench run per line, per round and side.
cases_file="$repo/configs/ci/$([[ "$smoke" == 1 ]] && echo smoke-cases || echo cases)"
mapfile -t ci_cases < <(grep -v -e '^#' -e '^[[:space:]]*$' "$cases_file")

log() { echo "perf-ci: $*" >&2; }

# Prints the source folder of a side: a folder as given, or a worktree of the revision.
checkout() {
  local name="$1" ref="$2"
  if [[ -d "$ref" ]]; then
    (cd "$ref" && pwd)
    return
  fi
  local commit
  commit="$(git rev-parse --verify --quiet "$ref^{commit}")" || { log "$ref is neither a folder nor a git revision"; return 2; }
  # The build folder goes inside the worktree (see build_dir): the same relative layout as this
  # tree's, so ccache serves the second build of the same sources.
  local tree="$work/$name"
  if [[ -d "$tree" ]]; then
    git -C "$tree" checkout --quiet --detach "$commit"
  else
    git worktree add --quiet --detach "$tree" "$commit" >&2
  fi
  echo "$tree"
}

# Whether a build folder was configured to the end (a failed configure leaves a cache and no
# build files: it must run again).
configured() { [[ -f "$1/CMakeCache.txt" && ( -f "$1/build.ninja" || -f "$1/Makefile" ) ]]; }

# Builds mtc-bench (and the targets given after $4, as --target NAME) of the source folder $2
# into $3 (a repeat rebuilds only what changed);
# configures first unless $4 is 0 (a build folder made elsewhere, reused as it is). Logs go to
# $work/logs/$1.*.log.
build() {
  local name="$1" src="$2" dir="$3" configure="${4:-1}" generator=()
  command -v ninja > /dev/null && generator=(-G Ninja)
  # A folder configured before is only built: the build system configures again by itself
  # when a CMake file changed.
  configured "$dir" && configure=0
  if [[ "$configure" == 1 ]]; then
    # MTC_WERROR as scripts/build.sh passes it: with the same compiler flags, ccache serves the
    # sources this tree's build compiled (CI sets it; without it every file compiled again).
    # shellcheck disable=SC2086
    cmake -S "$src" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="${MTC_BUILD_TYPE:-Release}" \
      -DCMAKE_PREFIX_PATH="$MTC_TORCH_PREFIX" -DMTC_BUILD_TESTS=OFF -DMTC_BUILD_MICROBENCH=OFF \
      ${MTC_WERROR:+-DMTC_WERROR="$MTC_WERROR"} ${MTC_CMAKE_ARGS:-} \
      > "$work/logs/$name.configure.log" 2>&1 ||
      { tail -20 "$work/logs/$name.configure.log" >&2; return 3; }
  fi
  cmake --build "$dir" -j "${MTC_JOBS:-$(nproc)}" --target mtc-bench "${@:5}" > "$work/logs/$name.build.log" 2>&1 ||
    { tail -40 "$work/logs/$name.build.log" >&2; return 3; }
}

# Builds the engine of the source folder $2 as a loadable library in $3, with the candidate's
# adapter (src/engine_plugin/standalone of $cand_src). Logs go to $work/logs/$1.*.log.
build_plugin() {
  local name="$1" src="$2" dir="$3" generator=()
  command -v ninja > /dev/null && generator=(-G Ninja)
  # shellcheck disable=SC2086
  configured "$dir" || cmake -S "$cand_src/src/engine_plugin/standalone" -B "$dir" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE="${MTC_BUILD_TYPE:-Release}" -DCMAKE_PREFIX_PATH="$MTC_TORCH_PREFIX" \
    -DMTC_ENGINE_SOURCE_DIR="$src" -DMTC_WERROR="${MTC_WERROR:-OFF}" ${MTC_CMAKE_ARGS:-} \
    > "$work/logs/$name.configure.log" 2>&1 || { tail -20 "$work/logs/$name.configure.log" >&2; return 3; }
  cmake --build "$dir" -j "${MTC_JOBS:-$(nproc)}" > "$work/logs/$name.build.log" 2>&1 ||
    { tail -40 "$work/logs/$name.build.log" >&2; return 3; }
}

start=$(date +%s)
base_src="$(checkout baseline "$1")" || exit 2
if [[ $# -eq 2 ]]; then
  cand_src="$(checkout candidate "$2")" || exit 2
else
  cand_src="$repo"
fi
# A git worktree's build folder lies inside it; a folder given as a side keeps its tree clean.
build_dir() { if [[ "$2" == "$work/$1" ]]; then echo "$2/build"; else echo "$work/build-$1"; fi; }
base_build="$(build_dir baseline "$base_src")"
cand_build="${MTC_PERF_CANDIDATE_BUILD:-$(build_dir candidate "$cand_src")}"
[[ $# -eq 2 && -n "${MTC_PERF_CANDIDATE_BUILD:-}" ]] && { log "MTC_PERF_CANDIDATE_BUILD needs the working tree as candidate"; exit 2; }
mkdir -p "$work/logs"
log "baseline $1 ($base_src), candidate ${2:-working tree} ($cand_src)"
if [[ "$mode" == in-process ]]; then
  log "building the candidate's mtc-bench and the baseline's engine library (logs in $work/logs)"
  # The library's folder lies beside the baseline's sources, as a build folder does (ccache).
  plugin_dir="$(build_dir baseline "$base_src")-plugin"
  build_plugin baseline-plugin "$base_src" "$plugin_dir" || exit 3
  build candidate "$cand_src" "$cand_build" "$([[ -n "${MTC_PERF_CANDIDATE_BUILD:-}" ]] && echo 0 || echo 1)" \
    --target mtc_engine_plugin || exit 3
  cand_bin="$cand_build/mtc-bench"
  libraries=(--engine-lib "base=$plugin_dir/libmtc_engine_plugin.so"
             --engine-lib "cand=$cand_build/src/engine_plugin/libmtc_engine_plugin.so")
  log "builds done in $(( $(date +%s) - start )) s"
  rm -rf "$out/in-process"
  mkdir -p "$out/in-process"
  for i in "${!ci_cases[@]}"; do
    read -r -a args <<< "${ci_cases[$i]}"
    # The case's own strategies (context) in the first process only; the pair in every one.
    pair_only=()
    for (( k = 1; k < ${#args[@]}; k++ )); do
      if [[ "${args[$k]}" == --strategy || "${args[$k]}" == -s ]]; then ((k++)); continue; fi
      pair_only+=("${args[$k]}")
    done
    for (( p = 0; p < processes; p++ )); do
      report="$out/in-process/case$i-run$p.json"
      options=("${args[@]:1}")
      (( p > 0 )) && options=("${pair_only[@]}")
      # shellcheck disable=SC2086
      "$cand_bin" --config "$cand_src/configs/${args[0]}" "${options[@]}" --strategy engine@cand,engine@base \
        "${libraries[@]}" --processes 1 --min-rounds "$rounds" --max-rounds "$rounds" \
        --round-time "$round_time" --round-cpus "$round_cpus" --quiet --json "$report" ${MTC_PERF_BENCH_ARGS:-} \
        > "$out/in-process/case$i-run$p.log" 2>&1 ||
        { log "run failed (case $i, run $p):"; tail -20 "$out/in-process/case$i-run$p.log" >&2; exit 3; }
      log "case $((i + 1))/${#ci_cases[@]}, run $((p + 1))/$processes done ($(( $(date +%s) - start )) s)"
    done
  done
  compare_inputs=("$out/in-process")
else
  log "building both (logs in $work/logs)"
  build baseline "$base_src" "$base_build" || exit 3
  if [[ "$cand_src" == "$base_src" ]]; then
    cand_build="$base_build"  # the same sources: one build serves both sides
  elif [[ -n "${MTC_PERF_CANDIDATE_BUILD:-}" ]]; then
    build candidate "$cand_src" "$cand_build" 0 || exit 3
  else
    build candidate "$cand_src" "$cand_build" || exit 3
  fi
  base_bin="$base_build/mtc-bench"
  cand_bin="$cand_build/mtc-bench"
  for bin in "$base_bin" "$cand_bin"; do
    grep -q -- "--ab-label" <<< "$("$bin" --help)" ||
      { log "$bin has no --ab-label: a revision older than report schema v2 cannot take part"; exit 2; }
  done
  log "builds done in $(( $(date +%s) - start )) s"

  rm -rf "$out/baseline" "$out/candidate"
  mkdir -p "$out/baseline" "$out/candidate"
  # The side that runs first alternates from round to round, from a side drawn from the job's
  # name: neither side always finds the host as the other left it, and a rerun of the job repeats
  # the order. A draw in every round gave one side every first place in a quarter of 3-round jobs;
  # CI's smoke job, identical builds on both sides, then called `to` hot 44.6 % faster for the
  # side that ran second (the 2-core CPU machine, 2026-12-04).
  RANDOM=$(( $(cksum <<< "$job" | cut -d ' ' -f 1) % 32768 ))
  first=$(( RANDOM % 2 ))
  for (( round = 0; round < rounds; round++ )); do
    sides=(baseline candidate)
    (( (round + first) % 2 )) && sides=(candidate baseline)
    for i in "${!ci_cases[@]}"; do
      read -r -a args <<< "${ci_cases[$i]}"
      # Both sides read the candidate's copy of the config: a changed config cannot make the two
      # workloads differ.
      config="$cand_src/configs/${args[0]}"
      for side in "${sides[@]}"; do
        bin="$base_bin"
        [[ "$side" == candidate ]] && bin="$cand_bin"
        report="$out/$side/case$i-round$round.json"
        # shellcheck disable=SC2086
        "$bin" --config "$config" "${args[@]:1}" --quick --quiet --ab-label "$job:$side:$round" \
          --json "$report" ${MTC_PERF_BENCH_ARGS:-} > "$out/$side/case$i-round$round.log" 2>&1 ||
          { log "$side run failed (round $round, case $i):"; tail -20 "$out/$side/case$i-round$round.log" >&2; exit 3; }
      done
    done
    log "round $((round + 1))/$rounds done (${sides[0]} first; $(( $(date +%s) - start )) s)"
  done
  compare_inputs=("$out/baseline" "$out/candidate")
fi

rc=0
# shellcheck disable=SC2086
"$cand_bin" compare "${compare_inputs[@]}" --fail-on "$fail_on" --md "$out/summary.md" \
  --json "$out/compare.json" ${MTC_PERF_COMPARE_ARGS:-} || rc=$?
if [[ -n "${GITHUB_STEP_SUMMARY:-}" && -f "$out/summary.md" ]]; then
  cat "$out/summary.md" >> "$GITHUB_STEP_SUMMARY"
fi
log "job $job: compare exit $rc; $(( $(date +%s) - start )) s in all; reports and summary in $out"
exit $rc
