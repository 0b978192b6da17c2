"""scripts/paired_verdict.py on synthetic paired runs whose truth is known: the interval's coverage
at 95 %, and each verdict where the data supports it and UNSURE where it does not."""

import math
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from paired_verdict import paired_verdict, t975, unsure_reading  # noqa: E402


def paired_runs(rng, runs, true_ratio, noise, drift=0.3):
    """Run times of a baseline and a candidate `true_ratio` times faster: each run's host state
    (a drift shared by both sides of the run, up to 30 % here) times each side's own log-normal
    noise."""
    base, cand = [], []
    for _ in range(runs):
        state = 1.0 + drift * rng.random()
        base.append(100e-6 * state * math.exp(rng.gauss(0.0, noise)))
        cand.append(100e-6 / true_ratio * state * math.exp(rng.gauss(0.0, noise)))
    return base, cand


@pytest.mark.parametrize("runs", [3, 5, 10, 31])
def test_the_interval_holds_the_true_ratio_about_95_times_in_100(runs):
    rng = random.Random(runs)
    trials = 2000
    held = 0
    for _ in range(trials):
        base, cand = paired_runs(rng, runs, true_ratio=1.07, noise=0.03)
        v = paired_verdict(base, cand)
        held += v["low"] <= 1.07 <= v["high"]
    # Binomial spread of 2,000 trials at 95 %: about 0.5 %; the table's two decimals add a little.
    assert 0.93 <= held / trials <= 0.97, held / trials


def test_the_host_state_shared_by_a_run_cancels_out():
    # 30 % drift between runs, 0.2 % noise within: the interval is narrow around the truth.
    base, cand = paired_runs(random.Random(1), 10, true_ratio=1.0, noise=0.002)
    v = paired_verdict(base, cand)
    assert v["verdict"] == "SAME" and v["high"] / v["low"] < 1.01, v


def test_a_clear_gain_is_faster_and_a_clear_loss_slower():
    rng = random.Random(2)
    assert paired_verdict(*paired_runs(rng, 8, 1.10, 0.01))["verdict"] == "FASTER"
    assert paired_verdict(*paired_runs(rng, 8, 0.90, 0.01))["verdict"] == "SLOWER"


def test_noise_wider_than_the_threshold_is_unsure_not_a_guess():
    v = paired_verdict(*paired_runs(random.Random(3), 5, 1.0, 0.05))
    assert v["verdict"] == "UNSURE" and (v["low"] < 1 / 1.02 or v["high"] > 1.02), v


def test_a_change_inside_the_threshold_measured_well_is_same():
    v = paired_verdict(*paired_runs(random.Random(4), 20, 1.005, 0.002))
    assert v["verdict"] == "SAME", v


def test_fewer_than_three_runs_give_no_interval_and_unsure():
    v = paired_verdict([2.0, 2.0], [1.0, 1.0])
    assert v == {"ratio": 2.0, "low": None, "high": None, "runs": 2, "verdict": "UNSURE"}


def test_sides_of_different_lengths_or_none_are_refused():
    with pytest.raises(ValueError):
        paired_verdict([1.0, 1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError):
        paired_verdict([], [])


def test_t_quantiles_fall_with_the_degrees_of_freedom_towards_the_normal():
    values = [t975(df) for df in range(1, 200)]
    assert values[0] == 12.71 and values[29] == 2.04 and values[-1] == 1.98
    assert all(a >= b for a, b in zip(values, values[1:]))
    with pytest.raises(ValueError):
        t975(0)


def test_an_unsure_verdict_says_on_which_side_of_1_it_lies():
    # The module's A/B of 2026-12-06 (1 x H100), a build 12 us slower as the baseline: 1.053x,
    # 1.017-1.091 over 20 runs, faster but UNSURE at 2 %.
    faster = {"ratio": 1.053, "low": 1.017, "high": 1.091, "runs": 20, "verdict": "UNSURE"}
    assert unsure_reading(faster).startswith("faster, but"), unsure_reading(faster)
    slower = {"ratio": 0.95, "low": 0.90, "high": 0.99, "runs": 5, "verdict": "UNSURE"}
    assert unsure_reading(slower).startswith("slower, but"), unsure_reading(slower)
    either = {"ratio": 1.005, "low": 0.97, "high": 1.04, "runs": 10, "verdict": "UNSURE"}
    assert unsure_reading(either).startswith("the interval holds 1"), unsure_reading(either)
    few = {"ratio": 2.0, "low": None, "high": None, "runs": 2, "verdict": "UNSURE"}
    assert unsure_reading(few).startswith("fewer than 3 runs"), unsure_reading(few)
    assert unsure_reading({"ratio": 1.1, "low": 1.05, "high": 1.15, "runs": 5, "verdict": "FASTER"}) == ""

