"""Task groups: the macro mean as a compare_metrics metric, HELM's mean win rate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import metrickit as mk
from metrickit.compute.groups import _group_wins, _macro_rows
from metrickit.errors import MetricError, StatsError


def _trials(seed: int = 1, sizes=(30, 8, 4), attempts: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = {"m1": (0.8, 0.3, 0.5), "m2": (0.6, 0.6, 0.6)}
    rows = []
    for g, n in enumerate(sizes):
        for i in range(n):
            for model, means in p.items():
                for _ in range(attempts):
                    rows.append({"id": f"g{g}t{i}", "subject": f"g{g}", "model": model,
                                 "ok": int(rng.random() < means[g])})
    return mk.trials_from_frame(pd.DataFrame(rows), task="id", reward="ok", model="model",
                                group="subject")


def _macro_by_hand(t: pd.DataFrame) -> float:
    task_means = t.groupby(["task_group", "task_name"])["ok"].mean()
    return float(task_means.groupby(level="task_group").mean().mean())


def test_macro_mean_weighs_each_group_once():
    df = pd.DataFrame({"id": ["a1", "a2", "a3", "b1"], "subject": ["a", "a", "a", "b"],
                       "ok": [1, 1, 1, 0]})
    t = mk.trials_from_frame(df, task="id", reward="ok", group="subject")
    assert mk.harbor_metric("mean")(t) == 0.75
    assert mk.macro_mean()(t) == 0.5


def test_compare_metrics_gives_macro_beside_micro_with_an_interval():
    t = _trials()
    c = mk.compare_metrics(t, [mk.harbor_metric("mean"), mk.macro_mean("task_group")])
    table = c.table.set_index(["group", "metric"])
    for model in ("m1", "m2"):
        row = table.loc[(model, "macro_mean[task_group]")]
        assert row["value"] == pytest.approx(_macro_by_hand(t[t["candidate"] == model]))
        assert row["ci_low"] < row["value"] < row["ci_high"]
        assert row["n_tasks"] == 42
    # the micro mean weighs the big group: m1 leads there, m2 on the macro mean
    assert table.loc[("m1", "mean"), "value"] > table.loc[("m2", "mean"), "value"]
    assert (table.loc[("m2", "macro_mean[task_group]"), "value"]
            > table.loc[("m1", "macro_mean[task_group]"), "value"])


def test_macro_rows_standard_error_is_the_stratified_one():
    # one candidate, one attempt: the clustered se of the rows is sqrt(sum s_g^2/(G^2 T_g)),
    # stretched by the ratio of Welch-Satterthwaite's t quantile to the T-1 one
    from scipy import stats

    t = _trials(sizes=(12, 6, 9), attempts=1)
    t = t[t["candidate"] == "m1"].reset_index(drop=True)
    u = _macro_rows(t, "task_group", None, "m")
    assert u.mean() == pytest.approx(_macro_by_hand(t))
    by_group = t.groupby("task_group")["ok"]
    s2, n = by_group.var(ddof=1).to_numpy(), by_group.size().to_numpy()
    parts = s2 / (len(n) ** 2 * n)
    se = np.sqrt(parts.sum())
    df = parts.sum() ** 2 / np.sum(parts**2 / (n - 1))
    stretch = max(1.0, stats.t.ppf(0.975, df) / stats.t.ppf(0.975, n.sum() - 1))
    assert u.std(ddof=1) / np.sqrt(u.size) == pytest.approx(se * stretch)


def test_one_group_is_the_plain_mean():
    t = _trials(sizes=(20,))
    for model in ("m1", "m2"):
        side = t[t["candidate"] == model]
        u = _macro_rows(side, "task_group", None, "m")
        np.testing.assert_allclose(u, side["ok"].to_numpy())


def test_a_group_of_one_task_is_a_note_not_a_warning():
    t = _trials(sizes=(10, 1))
    c = mk.compare_metrics(t, [mk.macro_mean()])
    assert sum("have one task" in n for n in c.notes) == 1  # once, not once per candidate
    assert c.table["ci_method"].str.contains("one task: too narrow").all()


def test_macro_mean_states_its_stratified_interval():
    from scipy import stats

    t = _trials(sizes=(12, 6, 9), attempts=2)
    c = mk.compare_metrics(t, [mk.macro_mean()], cluster="task_name")
    for model in ("m1", "m2"):
        side = t[t["candidate"] == model]
        task = side.groupby(["task_group", "task_name"])["ok"].mean()
        by_group = task.groupby(level="task_group")
        s2, n = by_group.var(ddof=1).to_numpy(), by_group.size().to_numpy()
        parts = s2 / (len(n) ** 2 * n)
        se = np.sqrt(parts.sum())
        df = parts.sum() ** 2 / np.sum(parts**2 / (n - 1))
        macro = by_group.mean().mean()
        half = stats.t.ppf(0.975, df) * se
        row = c.table[c.table["group"] == model].iloc[0]
        assert row["value"] == pytest.approx(macro)
        assert row["ci_low"] == pytest.approx(max(macro - half, 0.0))
        assert row["ci_high"] == pytest.approx(min(macro + half, 1.0))
        assert row["ci_method"] == "stratified"
        # harbor_value: the macro mean over trials (Inspect's and lm-eval's group means)
        assert row["harbor_value"] == pytest.approx(
            side.groupby("task_group")["ok"].mean().mean())


def test_macro_mean_method_carries_no_borrowed_note():
    # skewed per-row values used to give the macro mean a "skewed values" note from the
    # mean's interval; the stated interval says only what holds for it
    rng = np.random.default_rng(3)
    rows = [{"id": f"g{g}t{i}", "subject": f"g{g}", "cost": float(rng.lognormal(0, 1.5))}
            for g in range(3) for i in range(15)]
    t = mk.trials_from_frame(pd.DataFrame(rows), task="id", reward="cost", model=None,
                             group="subject")
    c = mk.compare_metrics(t, [mk.macro_mean(value="cost")], by=None)
    assert c.table["ci_method"].iloc[0] == "stratified"


def test_renamed_macro_mean_states_its_own_name():
    t = _trials(sizes=(10, 1))
    c = mk.compare_metrics(t, {"by subject": mk.macro_mean()})
    assert any(n.startswith("by subject:") for n in c.notes)


def test_trials_without_a_group_are_refused():
    t = _trials()
    t.loc[3, "task_group"] = None
    with pytest.raises(MetricError, match="1 trial\\(s\\) have no 'task_group'"):
        mk.macro_mean()(t)
    with pytest.raises(StatsError, match="no 'task_group'"):
        mk.win_rate(t)


def test_a_task_in_two_groups_is_refused():
    t = _trials()
    first = t.index[t["task_name"] == "g0t0"][0]
    t.loc[first, "task_group"] = "g1"
    with pytest.raises(MetricError, match=r"'g0t0'.*two groups"):
        mk.macro_mean()(t)


def test_breakdown_by_candidate_and_group_is_clustered():
    t = _trials()
    b = mk.breakdown(t, by=["candidate", "task_group"])
    assert len(b) == 6
    assert set(b["method"]) == {"cluster-wilson"}
    row = b[(b["candidate"] == "m1") & (b["task_group"] == "g0")].iloc[0]
    assert row["n"] == 60 and row["n_tasks"] == 30


def test_group_wins_count_ties_half():
    wins = _group_wins(np.array([0.5, 0.5, 0.2, np.nan]))
    np.testing.assert_allclose(wins[:3], [0.75, 0.75, 0.0])
    assert np.isnan(wins[3])


def test_win_rate_is_helms_mean_win_rate():
    t = _trials()
    w = mk.win_rate(t)
    per = w.per_group.pivot(index="task_group", columns="candidate", values="mean")
    expected = {m: np.mean([(per.loc[g, m] > per.loc[g].drop(m)).mean()
                            + 0.5 * (per.loc[g, m] == per.loc[g].drop(m)).mean()
                            for g in per.index]) for m in per.columns}
    got = w.table.set_index("candidate")["win_rate"].to_dict()
    assert got == pytest.approx(expected)
    assert (w.table["ci_low"] <= w.table["win_rate"]).all()
    assert (w.table["win_rate"] <= w.table["ci_high"]).all()
    assert "few groups (3)" in " ".join(w.notes)
    assert "mean win rate over 3 groups" in repr(w)


def test_win_rate_interval_is_narrow_when_orders_are_clear():
    rows = []
    for g in range(3):
        for i in range(30):
            for m, ok in (("good", 1), ("bad", 0)):
                rows.append({"id": f"{g}-{i}", "grp": str(g), "model": m, "ok": ok})
    t = mk.trials_from_frame(pd.DataFrame(rows), task="id", reward="ok", model="model",
                             group="grp")
    table = mk.win_rate(t).table.set_index("candidate")
    assert table.loc["good", ["win_rate", "ci_low", "ci_high"]].tolist() == [1.0, 1.0, 1.0]
    assert table.loc["bad", ["win_rate", "ci_low", "ci_high"]].tolist() == [0.0, 0.0, 0.0]


def test_win_rate_needs_two_candidates():
    t = _trials()
    with pytest.raises(StatsError, match="a win rate needs two"):
        mk.win_rate(t[t["candidate"] == "m1"])


def test_a_candidate_without_the_key_is_na_not_an_error():
    t = mk.examples.load("harbor_jobs")
    t["task_group"] = t["task_name"].str.split("-").str[0].isin(["fix", "write"]).map(
        {True: "fix/write", False: "other"})
    c = mk.compare_metrics(t, [mk.macro_mean(value="reward")])
    assert any("have one task" in n for n in c.notes)  # the 24-trial mini candidate
    table = c.table.set_index("group")
    assert np.isnan(table.loc["codex · gpt-5", "value"])  # a correctness/style evaluation
    measured = table["value"].dropna()
    assert len(measured) == 7 and measured.between(0, 1).all()


def test_polars_gives_the_same_macro_mean():
    pl = pytest.importorskip("polars")
    t = _trials()
    one = t[t["candidate"] == "m1"].reset_index(drop=True)
    polars_frame = pl.from_pandas(one.astype({"_status": str, "_kind_ok": str}))
    assert mk.macro_mean()(polars_frame) == pytest.approx(mk.macro_mean()(one))
