"""Google Benchmark's times in microseconds, for the scripts that read its JSON files: each entry
carries its own time_unit (ns when the field is absent), which a benchmark sets with ->Unit();
and a file's median per case, as the scripts that compare runs read it."""
import json
import re
import statistics

US_PER_UNIT = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def real_time_us(entry):
    """An entry's real_time in microseconds."""
    return entry["real_time"] * US_PER_UNIT[entry.get("time_unit", "ns")]


def case_medians(path):
    """{case: median over the file's repetitions} of the Google Benchmark JSON file at `path`
    (medians_of)."""
    with open(path) as f:
        return medians_of(json.load(f))


def medians_of(data):
    """{case: median over the repetitions} of a Google Benchmark JSON document: a case's "median"
    aggregate where it has one (mtc_engine_bench --benchmark_report_aggregates_only), else the
    median of its repetitions; median_us where a case reports it (whole copies), its time
    otherwise. Cases that failed (error_occurred) are left out."""
    aggregated, repetitions = {}, {}
    for b in data["benchmarks"]:
        if b.get("error_occurred"):
            continue
        value = b.get("median_us")
        if value is None:
            value = real_time_us(b)
        name = b.get("run_name", b["name"])
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                aggregated[name] = float(value)
                aggregated.update(gpu_ratios(name, b))
        else:
            repetitions.setdefault(name, []).append(float(value))
            for ratio_name, ratio in gpu_ratios(name, b).items():
                repetitions.setdefault(ratio_name, []).append(ratio)
    medians = {name: statistics.median(v) for name, v in repetitions.items()}
    medians.update(aggregated)
    return medians


def gpu_ratios(name, benchmark):
    """{"NAME, GPU g with every GPU / alone": ratio} for each GPU whose counters a line has (a
    median aggregate's counters are medians of the repetitions' counters, as its time is)."""
    ratios = {}
    for key, together in benchmark.items():
        found = re.fullmatch(r"gpu(\d+)_us", key)
        alone = benchmark.get(f"gpu{found.group(1)}_alone_us") if found else None
        if alone:
            ratios[f"{name}, GPU {found.group(1)} with every GPU / alone"] = float(together) / float(alone)
    return ratios
