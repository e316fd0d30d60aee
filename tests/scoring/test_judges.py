"""Judge repeatability and rater agreement: checked against sklearn's Cohen's kappa, the
krippendorff package's alpha, hand counts, and coverage in seeded simulations."""

from __future__ import annotations

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
from benchmark_modules import benchmark
from scipy import stats as scipy_stats
from sklearn.metrics import cohen_kappa_score

import metrickit as mk
from metrickit.compute.agreement import _alpha_jackknife, agreement, alpha_resampled
from metrickit.compute.stats import mean_ci
from metrickit.scoring.judges import judge_repeatability

ROOT = Path(__file__).resolve().parents[2]
CASES_DIR = ROOT / "data" / "cases"
LEVELS = ["nominal", "ordinal", "interval", "ratio"]


def _benchmark():
    return benchmark("coverage_judges")


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
    # the flip rate counts pairs of calls on a case: with 4 calls, 6 pairs per case
    def disagreeing(verdicts):
        v = verdicts.to_numpy(dtype=bool)
        return np.mean([v[i] != v[j] for i in range(len(v)) for j in range(i + 1, len(v))])
    by_pairs = calls.groupby("case")["verdict"].apply(disagreeing)
    np.testing.assert_allclose(cases["disagreement"], by_pairs)
    assert result.flip_rate == pytest.approx(by_pairs.mean())
    assert result.flip_pairs == 40 * 6
    assert result.flip_rate < flips.mean()  # a case that flips once has agreeing pairs too
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
    assert "disagree" in str(result) and "score >= 0.5" in str(result)
    assert f"{int(flips.sum())} of 40 cases flip at least once" in str(result)
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
    # the mean leaves the failed calls out; it is the mean over cases of each case's mean
    # (one estimand: a case that lost calls still weighs one case)
    valid = calls[calls["error"].isna()]
    assert result.mean.estimate == pytest.approx(valid.groupby("case")["score"].mean().mean())
    assert result.mean.estimate != pytest.approx(valid["score"].mean())
    assert result.mean.n_clusters == 5
    assert any("5 of 18 calls failed (3 cases)" in n for n in result.notes)
    # a failed call is no verdict: case 1 keeps 2 valid calls (1 pair), case 2 too, case 0
    # none (no pair); the flip rate counts the 1 + 1 + 3 + 3 + 3 pairs of valid calls
    assert result.flip_pairs == 11 and result.cases["disagreement"].isna().tolist() == [
        True, False, False, False, False, False]
    assert result.flip_rate == pytest.approx(result.cases["disagreement"].mean())
    assert any("1 case has fewer than two valid calls" in n for n in result.notes)


def test_every_call_failing_raises_with_the_most_common_error():
    cases = [{"q": i, "output": "a"} for i in range(4)]
    previous = mk.set_judge(None)
    try:
        with pytest.raises(mk.JudgeNotConfiguredError, match=r"all 8 calls failed") as err:
            judge_repeatability(CASES_DIR / "llm_judge.py",
                                [{"input": {"message": "m"}, "output": "a"}] * 4, repeats=2)
    finally:
        mk.set_judge(previous)
    assert "(8 of 8)" in str(err.value) and "metrickit.set_judge(judge)" in str(err.value)

    def broken(input, output):
        raise ValueError("judge API down" if input["q"] else "quota")
    with pytest.raises(mk.ScorerError, match=r"most common error \(6 of 8\): .*judge API down"):
        judge_repeatability(broken, cases, repeats=2)


def test_a_few_cases_note_says_cases_not_tasks():
    cases = [{"q": i, "output": "a"} for i in range(5)]
    result = judge_repeatability(lambda i, o: (float(i["q"] % 2), {"feedback": o}), cases,
                                 repeats=3)
    text = str(result.mean)
    assert "cases=5" in text and "few cases (5)" in text and "tasks" not in text


@pytest.mark.parametrize("garbage", [None, 42, {"verdict": "PASS"}, "", "  ", float("nan")])
def test_a_judge_returning_no_text_is_an_error_per_call(garbage):
    from metrickit.scoring.skynet import llm

    previous = mk.set_judge(lambda prompt, **kw: garbage)
    try:
        kind = type(garbage).__name__
        with pytest.raises(mk.ScorerError, match=rf"the judge returned .* \({kind}\)"):
            llm("Answer PASS or FAIL.", input="x")
        # every call fails: no "judge noise is 0%", an error naming what the judge gave
        with pytest.raises(mk.ScorerError, match=r"all 6 calls failed.*the judge returned"):
            judge_repeatability(CASES_DIR / "llm_judge.py",
                                [{"input": {"message": "m"}, "output": "a"}] * 3, repeats=2)
    finally:
        mk.set_judge(previous)


def test_a_judge_returning_no_text_now_and_then_fails_those_calls_only():
    from metrickit.scoring.skynet import llm

    answers = iter(["PASS. Fine.", None, "FAIL. No.", "PASS. Fine."] * 2)
    lock = threading.Lock()

    def judge(prompt, **kw):
        with lock:
            return next(answers)

    def score(input, output):
        verdict = llm("PASS or FAIL?", input=output)
        return float(verdict.startswith("PASS")), {"feedback": verdict}
    previous = mk.set_judge(judge)
    try:
        result = judge_repeatability(score, [{"q": i, "output": "a"} for i in range(4)],
                                     repeats=2, workers=1)
    finally:
        mk.set_judge(previous)
    assert result.failed_calls == 2
    failed = result.calls["error"].dropna()
    assert failed.str.contains(r"the judge returned None \(NoneType\)").all()
    assert any("2 of 8 calls failed" in n and "the judge returned None" in n
               for n in result.notes)


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
    assert result.kappa.method == "jackknife-z"
    # the interval is a t interval on the atanh scale, se carried there by the delta method
    se_z = se / (1 - result.kappa.estimate ** 2)
    t = scipy_stats.t.ppf(0.975, 24)
    centre = np.arctanh(result.kappa.estimate)
    assert result.kappa.low == pytest.approx(np.tanh(centre - t * se_z), rel=1e-9)
    assert result.kappa.high == pytest.approx(np.tanh(centre + t * se_z), rel=1e-9)
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


def test_weights_on_labels_need_categories_in_order():
    scale = ["low", "mid", "high"]
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, (2, 40))
    frame = pd.DataFrame({"a": np.array(scale)[codes[0]], "b": np.array(scale)[codes[1]]})
    for weights in ("linear", "quadratic"):
        with pytest.raises(mk.StatsError, match=rf"row 0: 'high' is not a number; "
                           rf"weights='{weights}' needs numeric .* give categories= in order"):
            agreement(frame, ["a", "b"], weights=weights)
        result = agreement(frame, ["a", "b"], weights=weights, categories=scale)
        assert result.kappa.estimate == pytest.approx(
            cohen_kappa_score(codes[0], codes[1], weights=weights), abs=1e-12)
    # as level="ordinal" already did; unweighted nominal kappa needs no order
    with pytest.raises(mk.StatsError, match="level='ordinal' needs numeric"):
        agreement(frame, ["a", "b"], level="ordinal")
    assert agreement(frame, ["a", "b"]).kappa.estimate == pytest.approx(
        cohen_kappa_score(codes[0], codes[1]))


def test_agreement_bounds_stay_within_minus_one_and_one():
    a = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    b = 1 - a
    b[0] = a[0]
    frame = pd.DataFrame({"a": a, "b": b})
    for method in ("jackknife", "bootstrap"):
        result = agreement(frame, ["a", "b"], method=method, n_resamples=500)
        for iv in (result.alpha, result.kappa):
            assert -1 <= iv.low <= iv.estimate <= iv.high <= 1
    jack = agreement(frame, ["a", "b"])
    # a t interval on the raw scale would run below -1; on the atanh scale it stays inside
    assert jack.kappa.estimate - 2 * jack.kappa.se < -1
    assert -1 < jack.kappa.low < jack.kappa.estimate and jack.alpha.low > -1
    assert "few cases (8)" in jack.kappa.note and "rare category" in jack.kappa.note


def test_an_interval_with_no_width_says_so():
    frame = pd.DataFrame({"a": ["x"] * 9 + ["y"], "b": ["x"] * 10})
    result = agreement(frame, ["a", "b"])
    assert result.kappa.low == result.kappa.high == 0 and result.kappa.se == 0
    for iv in (result.kappa, result.alpha):
        assert "the interval has no width" in iv.note
    assert sum("the interval has no width" in n for n in result.notes) == 2
    wide = agreement(pd.DataFrame({"a": [0, 1, 1, 0, 1, 0], "b": [0, 1, 0, 0, 1, 1]}),
                     ["a", "b"])
    assert "no width" not in str(wide)


def test_true_false_and_one_zero_are_the_same_ratings():
    frame = pd.DataFrame({"a": [True, False, True, True, False],
                          "b": [1, 0, 1, 0, 0]})
    result = agreement(frame, ["a", "b"])
    assert result.kappa.estimate == pytest.approx(cohen_kappa_score([1, 0, 1, 1, 0],
                                                                    [1, 0, 1, 0, 0]))
    assert result.pairs["agreement"][0] == pytest.approx(0.8)
    labelled = agreement(frame, ["a", "b"], categories=[False, True])
    assert list(labelled.confusion.index) == [False, True]
    assert labelled.confusion.to_numpy().tolist() == [[2, 0], [1, 2]]


@pytest.mark.parametrize(("a", "b"), [([1, 0, 1], ["1", "0", "1"]),
                                      (["Pass", "Fail", "Pass"], ["pass", "fail", "pass"])])
def test_raters_without_a_rating_in_common_are_noted(a, b):
    result = agreement(pd.DataFrame({"a": a, "b": b}), ["a", "b"])
    (note,) = [n for n in result.notes if "no rating value in common" in n]
    assert note.startswith("raters a and b have no rating value in common")
    assert repr(b[0]) in note and repr(a[0]) in note
    same = agreement(pd.DataFrame({"a": a, "b": a[:2] + b[2:]}), ["a", "b"])
    assert not any("in common" in n for n in same.notes)


def test_identical_ratings_say_why_alpha_and_kappa_are_undefined():
    result = agreement(pd.DataFrame({"a": ["x"] * 10, "b": ["x"] * 10}), ["a", "b"])
    assert np.isnan(result.alpha.estimate) and np.isnan(result.kappa.estimate)
    assert result.notes[0] == ("every rating is 'x': alpha and kappa are undefined (no "
                               "variation); raw agreement is 100 %")
    assert not any("resamples" in n for n in result.notes)
    assert result.pairs["agreement"][0] == 1


def test_one_case_rated_by_both_gives_a_note_and_no_warning():
    import warnings

    frame = pd.DataFrame({"a": ["x", None, "y"], "b": ["y", "x", None]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in ("jackknife", "bootstrap"):
            result = agreement(frame, ["a", "b"], method=method, n_resamples=50)
            assert result.kappa.n == 1 and np.isnan(result.kappa.low)
            assert "only 1 case has two ratings: no interval" in result.kappa.note
            assert "only 1 case has two ratings" in result.alpha.note


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


def test_ratio_agreement_refuses_negative_ratings():
    import pandas as pd

    import metrickit as mk

    ratings = pd.DataFrame({"a": [1.0, -2.0, 3.0, -1.0, 2.0, 4.0],
                            "b": [-1.0, 2.0, -3.0, 1.0, -2.0, 4.0]})
    with pytest.raises(mk.StatsError, match=r"negative.*level=.interval."):
        mk.agreement(ratings, ["a", "b"], level="ratio")


def test_the_ordinal_jackknife_equals_leaving_each_case_out():
    import numpy as np

    from metrickit.compute.agreement import _alpha_jackknife, alpha_resampled

    rng = np.random.default_rng(7)
    for _ in range(20):
        n, raters, k = int(rng.integers(3, 50)), int(rng.integers(2, 5)), int(rng.integers(2, 7))
        x = rng.integers(0, k, (n, raters)).astype(float)
        x[rng.random((n, raters)) < 0.25] = np.nan  # missing ratings, unpairable cases
        weights = np.ones((n, n))
        np.fill_diagonal(weights, 0.0)
        left_out = alpha_resampled(x, "ordinal", weights)  # one pass over all cases per case
        fast = _alpha_jackknife(x, "ordinal")  # one values x values matrix per case
        assert np.array_equal(np.isnan(left_out), np.isnan(fast))
        assert np.allclose(left_out[~np.isnan(fast)], fast[~np.isnan(fast)], rtol=0, atol=1e-12)


def test_the_flip_rate_is_unbiased_and_covers_when_calls_fail():
    rows = list(_benchmark().flip_rates(200))
    assert len(rows) == 9
    for r in rows:
        assert abs(r.bias) < 0.02 and r.observed >= 0.9, (r.setting, r.bias, r.observed)


def test_short_agreement_intervals_say_so():
    bench = _benchmark()
    # a 10 % category in 20 cases: kappa undercovers, and the intervals that do say so
    covered, noted, unnoted = bench.agreement_cell("kappa", 20, 200, rate=0.1)
    assert covered < 0.93 and noted > 0.5 and unnoted >= 0.93
    # lognormal ratings, interval alpha: the skew note is on (nearly) every interval
    covered, noted, _ = bench.agreement_cell("alpha-lognormal", 40, 100, sigma=1.0)
    assert noted >= 0.95
    covered, noted, unnoted = bench.agreement_cell("fleiss", 50, 100)
    assert covered >= 0.9 and unnoted >= 0.9
