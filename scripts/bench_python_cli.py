"""bench_python.py's command line: its options, and its report paths checked before a run of minutes."""

import argparse
import json
from pathlib import Path

import torch

from bench_python_methods import ORIGINAL_MODULE
from bench_python_report import FAIL_ON


def parse_args(argv, description):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", default=str(Path(__file__).resolve().parent.parent / "configs/streampetr.json"),
                        help="workload config whose structure is built (default: configs/streampetr.json)")
    parser.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE",
                        help="set one of the config's params, VALUE in JSON (e.g. --set samples=4); repeatable")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                        help="the copies' target (default: cuda when there is a GPU, else cpu)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls per method first (default: 20)")
    parser.add_argument("--runs", type=int, default=10,
                        help="runs per method and pattern, interleaved with the other methods' (default: 10)")
    parser.add_argument("--iters", type=int, default=50, help="timed calls per run (default: 50)")
    parser.add_argument("--methods", default="to,to_nb,mtc",
                        help="comma-separated, 'to' included: to, to_nb, mtc, mtc_nodefer (mtc without "
                        "its deferred release), mtc_noreuse (mtc without its reuse of tensor objects), "
                        "mtc_nostream (mtc walking the whole structure before the engine starts), mtc_wide (the "
                        "engine's walk split at one thread per 40 leaves, not 128), mtc_narrow (per 256), "
                        "mtc_again (mtc itself once more: an A/A pair, the bench's own spread)")
    parser.add_argument("--fixed-order", action="store_true",
                        help="run the methods in the order given in every run instead of starting each run one "
                        "method further on (to see what a method's place in the order does)")
    parser.add_argument("--original", action="store_true",
                        help=f"also time the original package ({ORIGINAL_MODULE}), interleaved")
    parser.add_argument("--baseline", metavar="PACKAGE",
                        help="also time PACKAGE, a build of mtc from another tree installed under that name "
                        "(scripts/install_module_as.py), interleaved with mtc and with its settings; the report "
                        "judges mtc against it run by run (SAME, FASTER, SLOWER or UNSURE)")
    parser.add_argument("--ab-cpus", type=int, default=8, metavar="N",
                        help="confine the whole process to N CPUs drawn anew for each run of the A/B against "
                        "--baseline or mtc_again, so both sides' threads share those CPUs' speed (default: 8; "
                        "0, or N at least the CPUs the process may use: not confined)")
    parser.add_argument("--fail-on", choices=tuple(FAIL_ON), default="slower",
                        help="exit 1 when a verdict of the A/B against --baseline is one of these: slower (mtc "
                        "SLOWER than the baseline build; the default), faster, any, or none; UNSURE and SAME never "
                        "fail, nor mtc_again's verdicts (a check of the measurement itself)")
    parser.add_argument("--md", type=Path, help="also write the Markdown table (printed either way) here")
    parser.add_argument("--json", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    if min(args.runs, args.iters) < 1 or min(args.warmup, args.ab_cpus) < 0:
        parser.error("--runs and --iters must be >= 1, --warmup and --ab-cpus >= 0")
    named = args.methods.split(",")
    if args.baseline is not None and "mtc" not in named:
        parser.error("--baseline: mtc must be among --methods (it is judged against the baseline)")
    if "mtc_again" in named and "mtc" not in named:
        parser.error("--methods: mtc_again needs mtc beside it (the A/A pair is judged against mtc)")
    return args


def parse_overrides(items):
    """{param: value} from --set's PARAM=VALUE items; ValueError naming the item that is not one."""
    overrides = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not name or not equals:
            raise ValueError(f"--set {item}: not PARAM=VALUE")
        try:
            overrides[name] = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError(f"--set {item}: the value is not JSON (a string is written \"...\")") from None
    return overrides


def check_outputs(args):
    """Refuses, before anything is measured, a report path that could not be written or would
    overwrite an input: the run takes minutes, and its end is the wrong time to find out."""
    outputs = [(option, path) for option, path in (("--md", args.md), ("--json", args.json)) if path]
    for option, path in outputs:
        if path.is_dir():
            raise ValueError(f"{option} {path}: a folder")
        if not path.parent.is_dir():
            raise ValueError(f"{option} {path}: no folder {path.parent} to write it in")
        if path.exists() and path.resolve() == Path(args.config).resolve():
            raise ValueError(f"{option} {path}: the config itself")
    if len(outputs) == 2 and outputs[0][1].resolve() == outputs[1][1].resolve():
        raise ValueError(f"--md and --json: the same file {args.md}")
