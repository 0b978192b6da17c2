#!/usr/bin/env python3
"""Summarizes mtc_lockstep_copies: one process per GPU, every copy released at the same moment.

    python3 scripts/lockstep_summary.py LABEL RANK0.json RANK1.json ...

Prints one line: each rank's median copy time in the iterations where every rank copied, as a
ratio to its own median in the iterations where it copied alone, and as a ratio to rank 0's
alone (the same processes; iterations of both kinds, and the rank alone, chosen at random).
Medians, not means: a copy that met a sleeping worker moves a mean. Exits 1 when a rank is
missing a kind of iteration.
"""
import json
import statistics
import sys


def main(label, paths):
    ranks = [json.load(open(p)) for p in paths]
    ranks.sort(key=lambda r: r["rank"])
    if [r["rank"] for r in ranks] != list(range(len(ranks))):
        print(f"{label}: ranks {[r['rank'] for r in ranks]}, not 0 to {len(ranks) - 1}", file=sys.stderr)
        return 1
    if len({len(r["all_us"]) for r in ranks}) > 1:
        print(f"{label}: the ranks copied together a different number of times", file=sys.stderr)
        return 1
    if any(not r.get("all_us") or not r.get("alone_us") for r in ranks):
        print(f"{label}: a rank has no copies of one kind; nothing to compare", file=sys.stderr)
        return 1
    together = [statistics.median(r["all_us"]) for r in ranks]
    alone = [statistics.median(r["alone_us"]) for r in ranks]
    own = [t / a for t, a in zip(together, alone)]
    first = [t / alone[0] for t in together]
    print(f"{label}, one process per GPU, lock-stepped, {len(ranks)} processes: each GPU "
          f"{min(own):.2f}-{max(own):.2f}x its own time alone ({min(alone):.1f}-{max(alone):.1f} us), "
          f"{min(first):.2f}-{max(first):.2f}x GPU 0 alone ({len(ranks[0]['all_us'])} iterations together, "
          f"{sum(len(r['alone_us']) for r in ranks)} alone)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
