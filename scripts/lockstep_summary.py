#!/usr/bin/env python3
"""Summarizes mtc_lockstep_copies: one process per GPU, every copy released at the same moment.

    python3 scripts/lockstep_summary.py LABEL RANK0.json RANK1.json ...

Prints one line: each rank's median copy time in the iterations where every rank copied, as a
ratio to rank 0's median in the iterations where it copied alone (the same processes, iterations
of both kinds in random order), and the slowest rank's ratio. Medians, not means: a copy that
met a sleeping worker moves a mean. Exits 1 when a file is missing a kind of iteration.
"""
import json
import statistics
import sys


def main(label, paths):
    ranks = [json.load(open(p)) for p in paths]
    ranks.sort(key=lambda r: r["rank"])
    alone = ranks[0].get("alone_us") or []
    if not alone or any(not r.get("all_us") for r in ranks):
        print(f"{label}: a rank has no copies of one kind; nothing to compare", file=sys.stderr)
        return 1
    base = statistics.median(alone)
    ratios = [statistics.median(r["all_us"]) / base for r in ranks]
    print(f"{label}, one process per GPU, lock-stepped, {len(ranks)} processes: each GPU "
          f"{min(ratios):.2f}-{max(ratios):.2f}x GPU 0 alone ({base:.1f} us; "
          f"{len(alone)} alone and {len(ranks[0]['all_us'])} together iterations)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
