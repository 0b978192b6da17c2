#!/usr/bin/env python3
"""Writes the synthetic schema-v2 reports that tests/compare, the CLI tests and the plot test read
(committed under data/). Every figure follows from the constants below, so each test knows the
truth it checks against:

- base.json: streampetr on an H100, h2d, patterns hot and step, strategies `to` and `engine`
  (6 rounds, intervals of +-1 %), plus a d2d entry skipped for want of a second GPU.
- same.json: the same figures (an A/A pair with base.json).
- slower.json: the engine 10 % slower (so its speedup over `to` 10 % lower), intervals +-1 %.
- faster.json: the engine 20 % faster.
- noisy.json: the engine 5 % slower with intervals of +-8 % (straddles a 5 % threshold).
- extra.json: base.json plus a memcpy_batch case the others lack (unmatched).
- h200.json: base.json measured on an H200.
- stored.json: base.json from another host and day.
- stored-ratios.json: base.json plus memcpy_batch cases, from another host and day whose every
  time is 40 % longer (the same-run ratios unchanged); ratios-same.json the same on this host at
  the original times, ratios-slower.json with the engine 1.5x slower (its speedups a third lower).
- v1.json: a schema version 1 report.
- sweep.json: three sweep points (132, 528 and 2,112 tensors) whose times grow with the tensors,
  for the plots.
- one-round.json: base.json from a single round: its intervals are [0, null) (nothing known).
- ab/{baseline,candidate}/round-R.json: an A/B job of 6 rounds whose host state moves the
  medians by up to 25 % from round to round, equally on both sides; the candidate's engine is
  10 % slower in every round (within +-0.4 % of jitter).
- aa/{baseline,candidate}/round-R.json: the same job with no change (an A/A job).

    python3 tests/compare/make_fixtures.py
"""

import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent / "data"
H100 = "NVIDIA H100 80GB HBM3"
H200 = "NVIDIA H200"
HASH = "5bd2a0c4e1f39a77"
# (pattern, strategy) -> median wall time in seconds.
BASE_MEDIANS = {("hot", "to"): 5.0e-3, ("hot", "engine"): 2.5e-4, ("step", "to"): 5.5e-3, ("step", "engine"): 3.0e-4}
HOST_FACTORS = [1.00, 1.18, 0.91, 1.10, 0.95, 1.25]
JITTER = [1.000, 1.004, 0.997, 1.002, 0.999, 1.003]


def entry(pattern, strategy, median, half, to_median, rounds=6):
    """A schema-v2 result entry whose interval is median / (1 + half) .. median * (1 + half)."""
    high = None if rounds < 2 else median * (1 + half)
    e = {
        "device": 0, "direction": "h2d", "strategy": strategy, "pattern": pattern,
        "source": "cpu", "target": "cuda:0", "status": "ok", "reason": "", "verified": True,
        "stop_reason": "noise_target", "warmup": 5, "samples": 60, "measure_time_s": 0.3,
        "wall_s": {"count": 60, "min": median * 0.95, "p10": median * 0.97, "median": median, "mean": median * 1.01,
                   "stdev": median * 0.02, "p90": median * 1.04, "p99": median * 1.1, "max": median * 1.2,
                   "noise": half / 1.96},
        "interval_s": {"low": 0.0 if rounds < 2 else median / (1 + half), "high": high, "level": 0.95},
        "noise": {"within": half / 3, "between": half / 1.96, "reported": half / 1.96},
        "rounds": {"count": rounds, "median_s": [median] * rounds, "samples": [10] * rounds, "process": [0] * rounds},
        "caller_blocked_s": None, "gpu_s": None, "cpu_s": None, "exposed_s": None,
        "throughput": {"gb_per_s": 153628 / median / 1e9, "tensors_per_s": 528 / median},
        "speedup_vs_to": None,
    }
    if strategy != "to":
        s = to_median / median
        e["speedup_vs_to"] = {"estimate": s, "low": None if rounds < 2 else s / (1 + 1.5 * half),
                              "high": None if rounds < 2 else s * (1 + 1.5 * half), "level": 0.95, "rounds": rounds}
    else:
        e["speedup_vs_to"] = {"estimate": 1.0, "low": 1.0, "high": 1.0, "level": 0.95, "rounds": rounds}
    if strategy.startswith("engine"):
        e["engine"] = {"steps_median_us": {"queued": 3.1, "traverse": median * 2e5, "submit": 12.0,
                                           "outputs": median * 1e5}}
    return e


def report(medians, half=0.01, gpu=H100, host="gpu-host-a", date="2026-11-20T10:00:00Z", ab=None, rounds=6,
           extra=()):
    results = []
    for (pattern, strategy), median in medians.items():
        results.append(entry(pattern, strategy, median, half, medians[(pattern, "to")], rounds))
    for pattern, strategy, median in extra:
        results.append(entry(pattern, strategy, median, half, medians[(pattern, "to")], rounds))
    for pattern in ("hot", "step"):
        results.append({"device": 0, "direction": "d2d", "strategy": "engine", "pattern": pattern, "source": "cuda:0",
                        "target": "cuda:1", "status": "skipped", "reason": "needs two GPUs", "verified": None})
    return {
        "schema_version": 2,
        "context": {"tool": {"name": "mtc-bench", "version": "0.1.0", "git_revision": "fixture"}, "date": date,
                    "host": host, "cpu": {"model": "fixture CPU", "logical_cores": 16}, "torch_version": "2.11.0",
                    "cuda": {"driver_version": "13.0", "runtime_version": "13.0", "device_count": 1},
                    "gpus": [{"index": 0, "name": gpu, "sm_count": 132}]},
        "command_line": ["mtc-bench", "--config", "streampetr"],
        "profile": False,
        "ab": ab,
        "interrupted": False,
        "runs": [{
            "sweep_point": {},
            "config": {"file": "configs/streampetr.json", "name": "streampetr", "seed": 0, "given": {}, "resolved": {}},
            "settings": {"patterns": ["hot", "step"], "rounds_min": 5, "rounds_max": 20, "round_time_s": 0.05,
                         "inputs": 8, "gap_us": 2000, "processes": 1, "quick": False, "interval_level": 0.95},
            "workload": {"hash": HASH, "tensors": 528, "bytes": 153628, "summary": {}},
            "results": results,
            "aggregates": [],
            "notes": [],
        }],
        "exit_code": 0,
    }


def scaled(factor_of):
    return {key: median * factor_of(key) for key, median in BASE_MEDIANS.items()}


def write(name, doc):
    """Top-level fixtures indented for reading; the many round files of the A/B jobs compact."""
    path = HERE / name
    path.parent.mkdir(parents=True, exist_ok=True)
    compact = "/" in name
    path.write_text(json.dumps(doc, indent=None if compact else 1, separators=(",", ":") if compact else None) + "\n")


def engine_times(factor):
    return lambda key: factor if key[1] == "engine" else 1.0


def main():
    write("base.json", report(BASE_MEDIANS))
    write("same.json", report(BASE_MEDIANS))
    write("slower.json", report(scaled(engine_times(1.10))))
    write("faster.json", report(scaled(engine_times(0.80))))
    write("noisy.json", report(scaled(engine_times(1.05)), half=0.08))
    write("extra.json", report(BASE_MEDIANS, extra=[("hot", "memcpy_batch", 1.1e-3)]))
    write("h200.json", report(BASE_MEDIANS, gpu=H200))
    write("stored.json", report(BASE_MEDIANS, host="gpu-host-b", date="2026-10-02T08:30:00Z"))
    write("one-round.json", report(BASE_MEDIANS, rounds=1))
    memcpy = [("hot", "memcpy_batch", 1.1e-3), ("step", "memcpy_batch", 1.3e-3)]
    slow_host = [(p, s, m * 1.4) for p, s, m in memcpy]
    write("stored-ratios.json", report(scaled(lambda key: 1.4), host="gpu-host-b", date="2026-10-02T08:30:00Z",
                                       extra=slow_host))
    write("ratios-same.json", report(BASE_MEDIANS, extra=memcpy))
    write("ratios-slower.json", report(scaled(engine_times(1.5)), extra=memcpy))
    v1 = report(BASE_MEDIANS)
    v1["schema_version"] = 1
    write("v1.json", v1)
    sweep = report(BASE_MEDIANS)
    runs = []
    for samples in (4, 16, 64):
        run = json.loads(json.dumps(sweep["runs"][0]))
        scale = samples / 16
        run["sweep_point"] = {"samples": str(samples)}
        run["workload"].update({"hash": f"{samples:016x}", "tensors": 33 * samples, "bytes": 9602 * samples})
        for e in run["results"]:
            if e["status"] == "ok":
                growth = scale if e["strategy"] == "to" else scale ** 0.7
                for key in ("median",):
                    e["wall_s"][key] *= growth
                e["interval_s"]["low"] *= growth
                e["interval_s"]["high"] *= growth
                if e["strategy"] != "to":
                    for key in ("estimate", "low", "high"):
                        e["speedup_vs_to"][key] *= scale ** 0.3
        runs.append(run)
    sweep["runs"] = runs
    write("sweep.json", sweep)
    for job, change in (("ab", 1.10), ("aa", 1.00)):
        for r, (host, jitter) in enumerate(zip(HOST_FACTORS, JITTER)):
            for side, factor in (("baseline", 1.0), ("candidate", change)):
                j = jitter if side == "candidate" else 1.0
                medians = scaled(lambda key: host * j * (factor if key[1] == "engine" else 1.0))
                doc = report(medians, ab={"job": f"fixture-{job}", "side": side, "round": r})
                write(f"{job}/{side}/round-{r}.json", doc)


if __name__ == "__main__":
    main()
