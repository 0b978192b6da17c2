#!/usr/bin/env bash
# Runs N A/B jobs of scripts/perf-ci.sh back to back (the builds are made once and reused) and
# tallies their verdicts: the trust demonstrations of the CI job (an A/A job must say neither
# SLOWER nor FASTER; a real slowdown must be flagged SLOWER).
#
#   scripts/perf-trust.sh N OUT_DIR BASE_REF [CANDIDATE_REF]
#
# Writes OUT_DIR/trust.md (a table per job and per case) and OUT_DIR/trust.json (every job's
# compare JSON), two files only, so it fits the GPU host's returned files. The jobs' reports
# stay under $MTC_PERF_WORK (default .perf-ci). The environment of perf-ci.sh applies
# (MTC_PERF_ROUNDS, MTC_CMAKE_ARGS, ...). Exit 0 unless a job failed to build or run (3) or
# its input was bad (2).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 3 || $# -gt 4 ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
fi
jobs="$1"
out="$2"
shift 2
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "perf-trust: N must be a positive integer" >&2; exit 2; }
mkdir -p "$out"
work="${MTC_PERF_WORK:-.perf-ci}"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
# Tallies the jobs done so far into OUT_DIR/trust.md and trust.json (rewritten after every job,
# so a run cut short by a time limit still leaves what finished).
tally() {
  "${MTC_PYTHON:-python3}" - "$out" "${seconds[*]}" "${results[@]}" << 'EOF'
import collections
import json
import pathlib
import sys

out = pathlib.Path(sys.argv[1])
seconds = sys.argv[2].split()
docs = [json.loads(pathlib.Path(p).read_text()) for p in sys.argv[3:]]
verdicts = ("SLOWER", "FASTER", "UNSURE", "SAME")
lines = ["# perf-ci trust run", "", f"{len(docs)} A/B jobs; " + "; ".join(docs[0]["notes"]), "",
         "| job | seconds | " + " | ".join(verdicts) + " | could see | largest change (case) |",
         "|---|---:|" + "---:|" * 4 + "---:|---|"]
per_case = collections.defaultdict(collections.Counter)
for i, doc in enumerate(docs):
    cases = doc["cases"]
    worst = max(cases, key=lambda c: abs((c["ratio"] or 1) - 1))
    label = f'{worst["pattern"]} {worst["direction"]} {worst["strategy"]} {worst["metric"]}'
    seen = doc.get("detectable")
    seen = "-" if seen is None else f"\u00b1{seen * 100:.1f} %"
    lines.append(f"| {i} | {seconds[i]} | " + " | ".join(str(doc["counts"][v]) for v in verdicts)
                 + f' | {seen} | {(worst["ratio"] - 1) * 100:+.1f} % ({label}) |')
    for c in cases:
        per_case[(c["pattern"], c["direction"], c["strategy"], c["metric"])][c["verdict"]] += 1
lines += ["", "| pattern | direction | strategy | metric | " + " | ".join(verdicts) + " | median change |",
          "|---|---|---|---|" + "---:|" * 5]
for key, counts in per_case.items():
    ratios = sorted(c["ratio"] for d in docs for c in d["cases"]
                    if (c["pattern"], c["direction"], c["strategy"], c["metric"]) == key and c["ratio"])
    median = ratios[len(ratios) // 2] if ratios else float("nan")
    lines.append("| " + " | ".join(key) + " | " + " | ".join(str(counts[v]) for v in verdicts)
                 + f" | {(median - 1) * 100:+.1f} % |")
flagged = sum(1 for d in docs if d["counts"]["SLOWER"] > 0)
false_fast = sum(1 for d in docs if d["counts"]["FASTER"] > 0)


# SAME at a wider threshold t: the whole interval within [1/(1+t), 1+t], as compare judges it.
def same_at(doc, t):
    return all(c["high"] is not None and c["low"] >= 1 / (1 + t) and c["high"] <= 1 + t for c in doc["cases"])


lines += ["", f"jobs with a SLOWER case: {flagged} of {len(docs)}; with a FASTER case: {false_fast} of {len(docs)}; "
          f"every case SAME at 3 %: {sum(same_at(d, 0.03) for d in docs)} of {len(docs)}"]
(out / "trust.md").write_text("\n".join(lines) + "\n")
(out / "trust.json").write_text(json.dumps(docs, indent=1) + "\n")
print("\n".join(lines))
EOF
}

results=()
seconds=()
for (( j = 0; j < jobs; j++ )); do
  job_start=$(date +%s)
  job_out="$work/trust-$stamp/job$j"
  mkdir -p "$work/trust-$stamp"
  rc=0
  MTC_PERF_OUT="$job_out" MTC_PERF_JOB="trust-$stamp-$j" MTC_PERF_FAIL_ON=none \
    bash scripts/perf-ci.sh "$@" > "$job_out.log" 2>&1 || rc=$?
  if (( rc != 0 )); then
    echo "perf-trust: job $j failed (exit $rc):" >&2
    tail -30 "$job_out.log" >&2
    exit "$rc"
  fi
  results+=("$job_out/compare.json")
  seconds+=("$(( $(date +%s) - job_start ))")
  tally > /dev/null
  echo "perf-trust: job $((j + 1))/$jobs done" >&2
done

tally
