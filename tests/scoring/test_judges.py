"""Judge repeatability and rater agreement: checked against sklearn's Cohen's kappa, the
krippendorff package's alpha, hand counts, and coverage in seeded simulations."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
import zlib
from dataclasses import replace
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import polars as pl
import pytest
from sklearn.metrics import cohen_kappa_score

import metrickit as mk
from metrickit.compute.stats import mean_ci
from metrickit.scoring.judges import (
    _alpha_jackknife,
    agreement,
    alpha_resampled,
    judge_repeatability,
)

ROOT = Path(__file__).resolve().parents[2]
CASES_DIR = ROOT / "data" / "cases"
LEVELS = ["nominal", "ordinal", "interval", "ratio"]


def _benchmark():
    spec = importlib.util.spec_from_file_location(
        "coverage_judges", ROOT / "benchmarks" / "coverage_judges.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["coverage_judges"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


class NoisyJudge:
    """A local, seeded judge: each case has its own pass probability (from a checksum of
    what the scorer sends), and each call draws its verdict from a per-(case, call) seed,
    so repeats differ but every run of a test is the same."""

    def __init__(self, seed: int = 0, noisy: bool = True):
        self.seed, self.noisy = seed, noisy
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    @staticmethod
    def probability(text: str) -> float:
        return (zlib.crc32(text.encode()) % 5) / 4  # 0, .25, .5, .75 or 1

    def __call__(self, prompt: str, input: str = "", **kwargs) -> str:
        with self.lock:
            count = self.calls.get(input, 0)
            self.calls[input] = count + 1
        p = self.probability(input)
        if not self.noisy:
            return "PASS. Fits." if p >= 0.5 else "FAIL. Does not fit."
        draw = np.random.default_rng([self.seed, zlib.crc32(input.encode()), count]).random()
        return "PASS. Fits the question." if draw < p else "FAIL. Misses the question."


@pytest.fixture
def judge():
    j = NoisyJudge()
    previous = mk.set_judge(j)
    yield j
    mk.set_judge(previous)


@pytest.fixture(scope="module")
def tickets():
    rows = pd.read_json(CASES_DIR / "tickets.jsonl", lines=True)
    return rows.drop_duplicates("case_id").head(40).reset_index(drop=True)


# ---------------------------------------------------------------------------
# judge_repeatability
# ---------------------------------------------------------------------------


def test_repeatability_of_a_noisy_judge(judge, tickets):
    result = judge_repeatability(CASES_DIR / "llm_judge.py", tickets, repeats=4, workers=1)
    calls, cases = result.calls, result.cases
    assert len(calls) == 160 and len(cases) == 40 and result.failed_calls == 0
    assert list(cases["case_id"]) == list(tickets["case_id"])
    # the per-case table is the calls, summarised
    by_case = calls.groupby("case")["score"]
    np.testing.assert_allclose(cases["mean"], by_case.mean())
    np.testing.assert_allclose(cases["sd"], by_case.std(ddof=1))
    flips = calls.groupby("case")["verdict"].nunique() > 1
    assert list(cases["flips"]) == list(flips)
    assert result.flip_rate == pytest.approx(flips.mean())
    # cases the judge always passes or always fails never flip
    p = [NoisyJudge.probability(f"Question: {m['message']}\nAnswer: {o}")
         for m, o in zip(tickets["input"], tickets["output"], strict=True)]
    sure = np.isin(p, [0.0, 1.0])
    assert sure.any() and (~sure).any()
    assert not cases.loc[sure, "flips"].any() and (cases.loc[sure, "sd"] == 0).all()
    assert cases.loc[~sure, "flips"].mean() > 0.5
    # the interval is the case-clustered one on every call
    expected = mean_ci(calls["score"], clusters=calls["case"])
    assert result.mean == replace(expected, cluster_unit="cases")
    assert f"cases={len(cases)}" in str(result.mean)
    assert result.mean.method == "cluster-wilson" and result.mean.n_clusters == 40
    assert 0 < result.noise_share < 1
    assert "flips on" in str(result) and "score >= 0.5" in str(result)
    assert "<table" in result._repr_html_()


def test_repeatability_is_reproducible_with_the_same_judge_seed(tickets):
    runs = []
    for _ in range(2):
        previous = mk.set_judge(NoisyJudge(seed=3))
        try:
            runs.append(judge_repeatability(CASES_DIR / "llm_judge.py", tickets.head(15),
                                            repeats=3))
        finally:
            mk.set_judge(previous)
    pd.testing.assert_frame_equal(runs[0].calls, runs[1].calls)
    assert runs[0].mean == runs[1].mean


def test_a_judge_without_noise_never_flips(tickets):
    previous = mk.set_judge(NoisyJudge(noisy=False))
    try:
        result = judge_repeatability(CASES_DIR / "llm_judge.py", tickets.head(20), repeats=3)
    finally:
        mk.set_judge(previous)
    assert result.flip_rate == 0 and result.noise_share == 0
    assert (result.cases["sd"] == 0).all()


def test_the_verdict_is_score_at_or_above_the_threshold():
    cases = [{"q": i, "output": str(i)} for i in range(3)]
    scores = iter([0.5, 0.49, 0.7] * 2)
    lock = threading.Lock()

    def score(input, output):
        with lock:
            return next(scores), {"feedback": f"got {output}"}
    result = judge_repeatability(score, cases, repeats=2, workers=1)
    assert result.calls["verdict"].tolist() == [True, False, True] * 2
    result = judge_repeatability(lambda i, o: (0.6, {"feedback": o}), cases, repeats=2,
                                 threshold=0.7)
    assert not result.calls["verdict"].any()


def test_crashes_hangs_and_garbage_are_recorded_per_call():
    release = threading.Event()
    seen: dict[int, int] = {}
    lock = threading.Lock()

    def score(input, output, expected=None):
        with lock:
            call = seen[input["q"]] = seen.get(input["q"], 0) + 1
        q = input["q"]
        if q == 0:
            raise RuntimeError("judge API down")
        if q == 1 and call == 2:
            release.wait(5)  # hangs past the timeout on its second call
        if q == 2 and call == 1:
            return "PASS"  # breaks the contract
        return (1.0 if q % 2 else 0.0), {"feedback": f"Expected {expected!r}, got {output!r}."}

    cases = [{"q": i, "output": "a", "expected": "b"} for i in range(6)]
    try:
        result = judge_repeatability(score, cases, repeats=3, timeout=0.3, workers=2)
    finally:
        release.set()
    calls, table = result.calls, result.cases
    assert result.failed_calls == 3 + 1 + 1
    assert table["failed"].tolist() == [3, 1, 1, 0, 0, 0]
    errors = calls.set_index(["case", "repeat"])["error"]
    assert "RuntimeError: judge API down" in errors[(0, 0)]
    assert errors[(1, 1)].startswith("timed out")
    assert "returned 'PASS'" in errors[(2, 0)]
    assert calls.loc[calls["error"].notna(), "score"].isna().all()
    assert pd.isna(table.loc[0, "flips"]) and pd.isna(table.loc[0, "mean"])
    # the mean leaves the failed calls out
    valid = calls[calls["error"].isna()]
    assert result.mean.estimate == pytest.approx(valid["score"].mean())
    assert result.mean.n_clusters == 5
    assert any("5 of 18 calls failed (3 cases)" in n for n in result.notes)


def test_repeatability_refuses_what_it_cannot_use():
    cases = [{"q": 1, "output": "a"}]
    ok = lambda i, o: (1.0, {"feedback": "x"})  # noqa: E731
    with pytest.raises(mk.ScorerError, match="repeats is 1; expected a whole number >= 2"):
        judge_repeatability(ok, cases, repeats=1)
    with pytest.raises(mk.StatsError, match="threshold is 'high'"):
        judge_repeatability(ok, cases, threshold="high")
    with pytest.raises(mk.ScorerError, match="no cases"):
        judge_repeatability(ok, [])


# ---------------------------------------------------------------------------
# agreement: against sklearn and krippendorff
# ---------------------------------------------------------------------------


def _ratings(seed, n=60, raters=3, values=(1, 2, 3, 4), missing=0.2):
    rng = np.random.default_rng(seed)
    truth = rng.choice(values, n)
    data = np.where(rng.random((raters, n)) < 0.6, truth, rng.choice(values, (raters, n)))
    data = data.astype(float)
    data[rng.random(data.shape) < missing] = np.nan
    return data


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_equals_sklearn_on_the_pairs_both_rated(seed, weights):
    a, b = _ratings(seed, raters=2)
    frame = pd.DataFrame({"judge": a, "human": b})
    result = agreement(frame, ["judge", "human"], weights=weights)
    both = ~np.isnan(a) & ~np.isnan(b)
    assert result.kappa.estimate == pytest.approx(
        cohen_kappa_score(a[both], b[both], weights=weights), abs=1e-12)
    assert result.kappa.n == both.sum()
    assert result.pairs["dropped"][0] == (~both).sum() > 0
    assert any(f"{(~both).sum()} of 60 cases dropped" in n for n in result.notes)


def test_kappa_on_labels_and_each_pair_of_three_raters():
    rng = np.random.default_rng(7)
    labels = np.array(["billing", "other", "shipping"])
    frame = pd.DataFrame({r: labels[rng.integers(0, 3, 80)] for r in ("a", "b", "c")})
    frame.loc[[3, 9], "b"] = None
    result = agreement(frame, ["a", "b", "c"])
    assert result.kappa is None  # three raters: one kappa per pair
    assert len(result.pairs) == 3
    for row in result.pairs.itertuples():
        x, y = frame[row.rater_a], frame[row.rater_b]
        both = x.notna() & y.notna()
        assert row.kappa == pytest.approx(cohen_kappa_score(x[both], y[both]), abs=1e-12)
        assert row.n == both.sum() and row.low < row.kappa < row.high
    assert "a vs b" in str(result)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", range(3))
def test_alpha_equals_krippendorff(level, seed):
    data = _ratings(seed, raters=4)
    frame = pd.DataFrame(data.T, columns=["a", "b", "c", "d"])
    result = agreement(frame, ["a", "b", "c", "d"], level=level)
    assert result.alpha.estimate == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement=level), abs=1e-12)


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_of_every_resample_equals_krippendorff_on_the_resampled_cases(level):
    rng = np.random.default_rng(1)
    data = _ratings(11, n=40, values=(1, 2, 3, 5, 8))
    index = rng.integers(0, 40, (6, 40))
    weights = np.stack([np.bincount(i, minlength=40) for i in index])
    ours = alpha_resampled(data.T, level, weights)
    theirs = [krippendorff.alpha(reliability_data=data[:, i], level_of_measurement=level)
              for i in index]
    np.testing.assert_allclose(ours, theirs, atol=1e-12)


@pytest.mark.parametrize("level", ["interval", "ratio"])
def test_alpha_of_continuous_scores_equals_krippendorff(level):
    rng = np.random.default_rng(2)
    data = rng.gamma(2.0, 1.0, (3, 50))
    data[rng.random(data.shape) < 0.15] = np.nan
    frame = pd.DataFrame(data.T, columns=["x", "y", "z"])
    result = agreement(frame, ["x", "y", "z"], level=level)
    assert result.alpha.estimate == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement=level), abs=1e-12)
    assert result.kappa is None and result.categories == ()
    assert any("not categorical" in n for n in result.notes)


def test_interval_alpha_of_many_continuous_cases_needs_no_values_by_values_array():
    rng = np.random.default_rng(3)
    truth = rng.normal(size=20_000)
    frame = pd.DataFrame({f"r{j}": truth + rng.normal(0, 0.5, truth.size) for j in range(3)})
    start = time.perf_counter()
    result = agreement(frame, list(frame.columns), level="interval")
    assert time.perf_counter() - start < 2
    assert result.alpha.estimate == pytest.approx(0.8, abs=0.01)  # 1 - .25 / 1.25


@pytest.mark.parametrize("level", LEVELS)
def test_the_alpha_jackknife_subtracts_each_case_as_a_recomputation_would(level):
    data = _ratings(12, n=30, values=(1, 2, 3, 5, 8))
    fast = _alpha_jackknife(data.T, level)
    slow = alpha_resampled(data.T, level, 1 - np.eye(30))
    np.testing.assert_allclose(fast, slow, atol=1e-12)


def test_the_jackknife_values_are_leave_one_case_out():
    a, b = _ratings(4, n=25, raters=2, missing=0)
    result = agreement(pd.DataFrame({"a": a, "b": b}), ["a", "b"])
    loo = np.array([cohen_kappa_score(np.delete(a, i), np.delete(b, i)) for i in range(25)])
    se = np.sqrt(24 / 25 * np.sum((loo - loo.mean()) ** 2))
    assert result.kappa.method == "jackknife"
    assert result.kappa.se == pytest.approx(se, rel=1e-9)
    data = _ratings(5, n=25)
    frame = pd.DataFrame(data.T, columns=["a", "b", "c"])
    alpha = agreement(frame, ["a", "b", "c"]).alpha
    loo = np.array([krippendorff.alpha(reliability_data=np.delete(data, i, axis=1),
                                       level_of_measurement="nominal") for i in range(25)])
    assert alpha.se == pytest.approx(np.sqrt(24 / 25 * np.sum((loo - loo.mean()) ** 2)))


def test_the_bootstrap_is_seeded_and_says_how_many_resamples():
    data = _ratings(6)
    frame = pd.DataFrame(data.T, columns=["a", "b", "c"])
    one = agreement(frame, ["a", "b", "c"], method="bootstrap", n_resamples=500, seed=1)
    again = agreement(frame, ["a", "b", "c"], method="bootstrap", n_resamples=500, seed=1)
    other = agreement(frame, ["a", "b", "c"], method="bootstrap", n_resamples=500, seed=2)
    assert one.alpha == again.alpha and one.alpha.low != other.alpha.low
    assert one.alpha.method == "bootstrap"
    assert "500 bootstrap resamples over cases, seed 1" in str(one)
    assert "jackknife: 60 leave-one-case-out resamples" in str(agreement(frame, ["a", "b"]))


def test_the_confusion_table_counts_the_pairs_both_rated():
    frame = pd.DataFrame({"judge": ["pass", "pass", "fail", "pass", "fail", None, "unsure"],
                          "human": ["pass", "fail", "fail", "pass", "fail", "pass", None]})
    result = agreement(frame, ["judge", "human"])
    table = result.confusion
    assert list(table.index) == list(table.columns) == ["fail", "pass", "unsure"]
    assert table.index.name == "judge" and table.columns.name == "human"
    both = frame.dropna()
    expected = pd.crosstab(both["judge"], both["human"])
    assert table.loc[expected.index, expected.columns].equals(expected)
    assert table.to_numpy().sum() == 5 and table.loc["unsure"].sum() == 0
    flipped = result.confusion_table("human", "judge")
    assert flipped.equals(table.T.rename_axis(index="human", columns="judge"))


def test_categories_fix_the_order_and_let_ordinal_labels_be_ordered():
    scale = ["bad", "ok", "good", "great"]
    rng = np.random.default_rng(8)
    codes = rng.integers(0, 4, (2, 50))
    frame = pd.DataFrame({"a": np.array(scale)[codes[0]], "b": np.array(scale)[codes[1]]})
    result = agreement(frame, ["a", "b"], level="ordinal", categories=scale)
    assert list(result.confusion.index) == scale
    assert result.alpha.estimate == pytest.approx(
        krippendorff.alpha(reliability_data=codes.astype(float), level_of_measurement="ordinal"))


def test_polars_frames_work_too():
    data = _ratings(9, raters=2)
    frame = pl.DataFrame({"a": data[0], "b": data[1]}).with_columns(
        pl.col("a").fill_nan(None), pl.col("b").fill_nan(None))
    result = agreement(frame, ["a", "b"])
    both = ~np.isnan(data).any(axis=0)
    assert result.kappa.estimate == pytest.approx(
        cohen_kappa_score(data[0, both], data[1, both]))


def test_agreement_errors_name_the_column_row_and_value():
    frame = pd.DataFrame({"a": [1, 2, "high"], "b": [1, 2, 3]})
    with pytest.raises(mk.StatsError, match=r"no rater column\(s\) \['human'\]"):
        agreement(frame, ["a", "human"])
    with pytest.raises(mk.StatsError, match=r"column 'a', row 2: 'high' is not a number"):
        agreement(frame, ["a", "b"], level="interval")
    with pytest.raises(mk.StatsError, match=r"column 'b', row 2: rating 3 is not one of"):
        agreement(frame, ["a", "b"], categories=[1, 2, "high"])
    with pytest.raises(mk.StatsError, match="two or more different columns"):
        agreement(frame, ["a"])
    with pytest.raises(mk.StatsError, match="level is 'binary'"):
        agreement(frame, ["a", "b"], level="binary")
    with pytest.raises(mk.StatsError, match="no case has ratings from two raters"):
        agreement(pd.DataFrame({"a": [1, None], "b": [None, 2]}), ["a", "b"])


def test_perfect_agreement_and_a_single_value():
    frame = pd.DataFrame({"a": [0, 1, 1, 0, 1], "b": [0, 1, 1, 0, 1]})
    result = agreement(frame, ["a", "b"])
    assert result.kappa.estimate == 1 and result.alpha.estimate == 1
    assert result.kappa.high == 1
    same = agreement(pd.DataFrame({"a": [1, 1, 1], "b": [1, 1, 1]}), ["a", "b"])
    assert same.alpha.method == "none" and np.isnan(same.alpha.low)


# ---------------------------------------------------------------------------
# Coverage (seeded simulations with known truth; benchmarks/coverage_judges.py in full)
# ---------------------------------------------------------------------------


def test_the_judge_noise_interval_covers_the_truth():
    bench = _benchmark()
    rows = [*bench.judge_mean(300), *bench.judge_graded(300), *bench.judge_crashes(300)]
    clustered = [r for r in rows if r.cell != "judge-naive"]
    assert len(clustered) == 17
    assert all(r.observed >= 0.9 for r in clustered), [(r.setting, r.observed) for r in rows]
    # counting every call as independent would not
    naive = next(r for r in rows if r.cell == "judge-naive")
    assert naive.observed < 0.9


def test_the_kappa_truth_formula_matches_a_large_sample():
    bench = _benchmark()
    frame = bench.kappa_data(np.random.default_rng(0), 40_000)
    assert cohen_kappa_score(frame["a"], frame["b"]) == pytest.approx(
        bench.kappa_truth(0.6, 0.85, 0.75), abs=0.02)
    frame = bench.alpha_nominal_data(np.random.default_rng(0), 40_000)
    assert alpha_resampled(frame.to_numpy(), "nominal")[0] == pytest.approx(
        bench.alpha_nominal_truth(), abs=0.02)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["kappa", "alpha-nominal", "alpha-interval"])
def test_the_agreement_intervals_cover_the_truth(which):
    coverage = _benchmark().agreement_coverage(which, 40, 300)
    assert coverage >= 0.9
