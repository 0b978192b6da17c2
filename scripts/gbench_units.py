"""Google Benchmark's times in microseconds, for the scripts that read its JSON files: each entry
carries its own time_unit (ns when the field is absent), which a benchmark sets with ->Unit()."""

US_PER_UNIT = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def real_time_us(entry):
    """An entry's real_time in microseconds."""
    return entry["real_time"] * US_PER_UNIT[entry.get("time_unit", "ns")]
