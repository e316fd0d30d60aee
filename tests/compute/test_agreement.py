"""Agreement statistics (metrickit.compute.agreement): Krippendorff's published example,
Fleiss' kappa against statsmodels, and the notes an interval carries where it may fall short."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

import metrickit as mk
from metrickit.compute.agreement import agreement, fleiss_kappa

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers, 12 units,
# missing ratings; the paper gives alpha 0.743 (nominal), 0.815 (ordinal), 0.849 (interval)
# and 0.797 (ratio).
NAN = np.nan
PUBLISHED = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
])


@pytest.mark.parametrize(("level", "published"), [
    ("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)])
def test_krippendorffs_published_example(level, published):
    frame = pd.DataFrame(PUBLISHED.T, columns=["A", "B", "C", "D"])
    result = agreement(frame, ["A", "B", "C", "D"], level=level)
    assert round(result.alpha.estimate, 3) == published
    assert mk.agreement is agreement


def _ratings(seed, n=40, raters=4, k=3, p_same=0.6):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n)
    return np.where(rng.random((n, raters)) < p_same, truth[:, None],
                    rng.integers(0, k, (n, raters)))


@pytest.mark.parametrize("seed", range(6))
def test_fleiss_kappa_equals_statsmodels(seed):
    data = _ratings(seed, raters=3 + seed % 4, k=2 + seed % 3)
    frame = pd.DataFrame(data, columns=[f"r{j}" for j in range(data.shape[1])])
    table, _ = aggregate_raters(data)
    ours = fleiss_kappa(frame, list(frame.columns))
    assert ours.estimate == pytest.approx(sm_fleiss_kappa(table, method="fleiss"), abs=1e-12)
    assert ours.n == len(frame) and ours.low < ours.estimate < ours.high
    assert agreement(frame, list(frame.columns)).fleiss == ours


def test_fleiss_kappa_on_labels_and_as_a_public_name():
    labels = np.array(["bug", "feature", "question"])
    data = labels[_ratings(3, raters=5)]
    frame = pd.DataFrame(data, columns=list("abcde"))
    table, _ = aggregate_raters(_ratings(3, raters=5))
    assert mk.fleiss_kappa(frame, list("abcde")).estimate == pytest.approx(
        sm_fleiss_kappa(table), abs=1e-12)


def test_the_fleiss_jackknife_leaves_each_case_out():
    data = _ratings(4, n=25, raters=4)
    frame = pd.DataFrame(data, columns=list("abcd"))
    loo = np.array([sm_fleiss_kappa(aggregate_raters(np.delete(data, i, axis=0), n_cat=3)[0])
                    for i in range(25)])
    iv = fleiss_kappa(frame, list("abcd"))
    assert iv.se == pytest.approx(np.sqrt(24 / 25 * np.sum((loo - loo.mean()) ** 2)), rel=1e-9)
    assert iv.method == "jackknife-z"
    boot = fleiss_kappa(frame, list("abcd"), method="bootstrap", n_resamples=400, seed=1)
    assert boot.method == "bootstrap" and boot.estimate == iv.estimate
    assert boot == fleiss_kappa(frame, list("abcd"), method="bootstrap", n_resamples=400, seed=1)


def test_fleiss_kappa_needs_the_same_number_of_ratings_on_every_case():
    frame = pd.DataFrame({"a": ["x", "y", "x", "y"], "b": ["x", "y", None, "y"],
                          "c": ["x", "x", "x", "y"]})
    with pytest.raises(mk.StatsError, match=r"row 2 has 2 where others have 3.*alpha allows"):
        fleiss_kappa(frame, ["a", "b", "c"])
    result = agreement(frame, ["a", "b", "c"])
    assert result.fleiss is None
    assert any(n.startswith("no Fleiss' kappa: it needs the same number") for n in result.notes)


def test_a_rare_category_is_noted_on_kappa_alpha_and_fleiss():
    a = np.zeros(30, dtype=int)
    b, c = a.copy(), a.copy()
    a[[0, 1]] = 1        # rater a gives "1" twice, b three times, c three times
    b[[0, 1, 2]] = 1
    c[[0, 2, 3]] = 1
    frame = pd.DataFrame({"a": a, "b": b, "c": c})
    result = agreement(frame, ["a", "b"])
    assert "rare category (1: 2 of 30 ratings from a)" in result.kappa.note
    assert result.kappa.note.endswith("the interval may be too narrow")
    assert "rare category (1: 5 of 60 ratings)" in result.alpha.note
    three = agreement(frame, ["a", "b", "c"])
    assert "rare category (1: 8 of 90 ratings)" in three.fleiss.note
    assert "Fleiss' kappa" in str(three) and "the interval may be too narrow" in str(three)
    balanced = pd.DataFrame({"a": [0, 1] * 20, "b": [0, 1] * 19 + [1, 0]})
    assert agreement(balanced, ["a", "b"]).kappa.note == ""


def test_few_cases_are_noted():
    frame = pd.DataFrame({"a": [0, 1, 2, 0, 1, 2, 0, 1], "b": [0, 1, 2, 0, 1, 1, 0, 2]})
    result = agreement(frame, ["a", "b"])
    assert "few cases (8)" in result.kappa.note and "few cases (8)" in result.alpha.note
    assert "few cases (8)" in str(result)


def test_skewed_ratings_are_noted_for_interval_alpha():
    rng = np.random.default_rng(6)
    z = rng.normal(size=60)
    skewed = pd.DataFrame({r: np.exp(1.5 * z + 0.4 * rng.normal(size=60)) for r in "abc"})
    result = agreement(skewed, list("abc"), level="interval")
    assert "skewed ratings (skewness" in result.alpha.note
    assert "level='ordinal'" in result.alpha.note
    logged = agreement(np.log(skewed), list("abc"), level="interval")
    assert "skewed" not in logged.alpha.note


def test_the_jackknife_interval_stays_inside_minus_one_and_one_near_perfect_agreement():
    a = np.array([0, 1] * 15)
    b = a.copy()
    b[0] = 1
    result = agreement(pd.DataFrame({"a": a, "b": b}), ["a", "b"])
    # on the raw scale, estimate + t * se runs past 1
    assert result.kappa.estimate + 2 * result.kappa.se > 1
    assert result.kappa.high < 1 and result.kappa.low < result.kappa.estimate
