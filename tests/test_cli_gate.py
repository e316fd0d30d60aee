"""`metrickit gate` and `metrickit store` as a CI job runs them: exit codes 0 pass,
1 regression, 3 inconclusive, 2 bad input; Markdown on stdout, JSON on request."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from metrickit.cli import main


def _table(path, rates, *, seed, run, attempts=1, cost=0.01):
    rng = np.random.default_rng(seed)
    n = len(rates)
    df = pd.DataFrame({
        "task_name": np.repeat([f"t{i}" for i in range(n)], attempts),
        "reward": (rng.random((n, attempts)) < np.asarray(rates)[:, None]).astype(int).ravel(),
        "cost_usd": cost + rng.normal(0, 0.0005, n * attempts),
        "run": run,
    })
    df.to_csv(path, index=False)
    return path


@pytest.fixture
def rates():
    return np.random.default_rng(0).uniform(0.2, 0.9, 300)


def test_exit_1_on_a_clear_regression_with_markdown_and_json(tmp_path, rates, capsys):
    base = _table(tmp_path / "base.csv", rates, seed=1, run="base")
    cand = _table(tmp_path / "cand.csv", rates - 0.2, seed=2, run="cand")
    out = tmp_path / "gate.json"
    assert main(["gate", str(base), str(cand), "--margin", "0.05", "--json", str(out)]) == 1
    text = capsys.readouterr().out
    assert "**regression**" in text and "| reward (higher is better) | regression |" in text
    data = json.loads(out.read_text())
    assert data["verdict"] == "regression" and data["values"][0]["n_tasks"] == 300


def test_exit_0_on_an_equal_candidate_with_enough_tasks(tmp_path, capsys):
    rates = np.random.default_rng(3).choice([0.02, 0.98], 1500)
    base = _table(tmp_path / "base.csv", rates, seed=4, run="base")
    cand = _table(tmp_path / "cand.csv", rates, seed=5, run="cand")
    assert main(["gate", str(base), str(cand), "--margin", "0.05"]) == 0
    assert "**pass**" in capsys.readouterr().out


def test_exit_3_on_too_few_tasks(tmp_path, capsys):
    rates = np.full(6, 0.5)
    base = _table(tmp_path / "base.csv", rates, seed=6, run="base", attempts=2)
    cand = _table(tmp_path / "cand.csv", rates, seed=7, run="cand", attempts=2)
    assert main(["gate", str(base), str(cand)]) == 3
    assert "**inconclusive**" in capsys.readouterr().out


def test_several_values_and_bad_input_exits_2(tmp_path, rates, capsys):
    base = _table(tmp_path / "base.csv", rates, seed=1, run="base")
    cand = _table(tmp_path / "cand.csv", rates, seed=2, run="cand", cost=0.05)
    code = main(["gate", str(base), str(cand), "--value", "reward", "--value", "cost_usd",
                 "--margin", "0.2", "--margin", "0.005"])
    assert code == 1  # five times the cost: a regression on cost_usd alone
    assert "| cost_usd (lower is better) | regression |" in capsys.readouterr().out
    assert main(["gate", str(base), str(cand), "--value", "nope"]) == 2
    assert "'nope' is not a column" in capsys.readouterr().err
    assert main(["gate", str(base), str(tmp_path / "missing.csv")]) == 2
    assert main(["gate", str(base), str(cand), "--value", "reward", "--margin", "1",
                 "--margin", "2", "--margin", "3"]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["gate", str(base)])
    assert exc.value.code == 2


def test_store_add_list_and_gate_latest_against_previous(tmp_path, rates, capsys):
    store = tmp_path / "runs.duckdb"
    first = _table(tmp_path / "night-1.csv", rates, seed=1, run="night-1")
    second = _table(tmp_path / "night-2.csv", rates - 0.3, seed=2, run="night-2")
    assert main(["store", "add", str(first), "--store", str(store)]) == 0
    assert main(["store", "add", str(first), str(second), "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "added night-2" in out and "unchanged night-1" in out
    assert main(["store", "list", "--store", str(store)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == ["night-1", "night-2"]
    assert main(["gate", "previous", "latest", "--store", str(store), "--margin", "0.05"]) == 1
    assert "`run night-2` against `run night-1`" in capsys.readouterr().out
    assert main(["gate", "nope", "latest", "--store", str(store)]) == 2
