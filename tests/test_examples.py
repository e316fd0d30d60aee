"""mk.examples: the example data from any working directory, and inside the wheel; and the
sample data says what data/README.md says it does (checked against the generators' truth
and plain-Python recomputations, not against metrickit's own output)."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

import metrickit as mk

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
BENCH = DATA / "harbor_jobs" / "2025-07-14__09-00-00"
README_SPEC = {"weights": {"accuracy": 0.7, "speed": 0.2, "cost": 0.1}, "accuracy": {},
               "speed": {"reference": 2000}, "cost": {"reference": 0.01}}


def _generator(name: str):
    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_examples_load_from_any_folder(tmp_path):
    code = (
        "import metrickit as mk; t = mk.examples.load('harbor_jobs'); "
        "c = mk.examples.load('tickets'); r = mk.examples.load('runs'); "
        "print(len(t), len(c), len(r), mk.examples.path('cases/exact_match.py').is_file())"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout.split()
    # trials: 24 + 20 in the two small jobs, 6 x 40 x 4 in the large one; 200 tickets x 6
    # candidates; three runs of 400 tasks
    assert out == [str(24 + 20 + 6 * 40 * 4), str(200 * 6), str(3 * 400), "True"]


def test_every_named_data_set_loads_in_both_backends():
    for name in mk.examples.names():
        pandas = mk.examples.load(name)
        polars = mk.examples.load(name, backend="polars")
        assert len(pandas) == len(polars) > 0, name
        assert type(polars).__module__.startswith("polars")


def test_unknown_example_lists_what_exists():
    with pytest.raises(FileNotFoundError, match="data sets are"):
        mk.examples.path("nope")
    with pytest.raises(FileNotFoundError, match="expected one of"):
        mk.examples.load("cases/exact_match.py")


@pytest.mark.slow
def test_wheel_carries_the_example_data(tmp_path):
    # What a `pip install metrickit` user gets: the data inside the package, the Harbor
    # jobs as one archive that mk.examples unpacks into the user's cache on first use.
    # the build backend (hatchling) from the dev install: pip would otherwise install it
    # into a fresh build environment from the package index on every run
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    (wheel,) = tmp_path.glob("metrickit-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ("metrickit/examples.py", "metrickit/_examples/cases/tickets.jsonl",
                     "metrickit/_examples/rewards/runs/steady.jsonl",
                     "metrickit/_examples/metric_scripts/strict_pass_rate.py",
                     "metrickit/_examples/harbor_jobs.tar.xz"):
        assert expected in names, expected
    assert not any("/harbor_jobs/" in n or "__pycache__" in n for n in names)
    assert wheel.stat().st_size <= 1_000_000 and len(names) <= 500, (wheel.stat(), len(names))
    # The wheel's own package, imported from where the wheel was unpacked (not the checkout).
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import metrickit as mk, pathlib; p = mk.examples.path('harbor_jobs'); "
        "assert 'site' not in str(p) and p.is_dir(), p; "
        "t = mk.examples.load('harbor_jobs'); "
        f"s = mk.read_harbor_job(mk.examples.path('harbor_jobs/{BENCH.name}'), progress=False); "
        "print(p, len(t), len(s), mk.examples.load('tickets').shape[0], "
        "mk.examples.path('cases/exact_match.py').is_file())"
    )
    env = {**os.environ, "PYTHONPATH": str(site), "METRICKIT_CACHE_DIR": str(tmp_path / "c")}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out[1:] == [str(len(mk.examples.load("harbor_jobs"))), "960", "1200", "True"]
    unpacked = Path(out[0])
    files = sorted(p.relative_to(unpacked) for p in unpacked.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(DATA / "harbor_jobs")
                           for p in (DATA / "harbor_jobs").rglob("*") if p.is_file())
    assert all((unpacked / f).read_bytes() == (DATA / "harbor_jobs" / f).read_bytes()
               for f in files)


def test_examples_unpack_an_archived_folder_once(tmp_path, monkeypatch):
    # The wheel's layout without building one: the build hook's archive in an examples
    # root, unpacked into the cache by path(), byte for byte, and reused afterwards.
    hook = _generator("hatch_build")
    src = tmp_path / "src" / "harbor_jobs"
    for rel in ("a__1/result.json", "a__1/verifier/reward.txt", "b/config.json"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(f"{rel}\n".encode())
    root = tmp_path / "root"
    hook.write_archive(src, root / "harbor_jobs.tar.xz")
    first = (root / "harbor_jobs.tar.xz").read_bytes()
    hook.write_archive(src, root / "harbor_jobs.tar.xz")
    assert (root / "harbor_jobs.tar.xz").read_bytes() == first  # deterministic
    monkeypatch.setattr(mk.examples, "root", lambda: root)
    monkeypatch.setenv("METRICKIT_CACHE_DIR", str(tmp_path / "cache"))
    mk.examples._unpacked.cache_clear()
    try:
        found = mk.examples.path("harbor_jobs")
        assert found.parent.parent == tmp_path / "cache" and found.name == "harbor_jobs"
        assert (found / "a__1" / "verifier" / "reward.txt").read_bytes() == (
            b"a__1/verifier/reward.txt\n")
        assert mk.examples.path("harbor_jobs/b/config.json").read_bytes() == b"b/config.json\n"
        mk.examples._unpacked.cache_clear()
        (found / "marker").write_text("kept")  # a second process finds the unpacked copy
        assert (mk.examples.path("harbor_jobs") / "marker").is_file()
        assert [p.name for p in (tmp_path / "cache").iterdir()] == [found.parent.name]
    finally:
        mk.examples._unpacked.cache_clear()


def test_sample_data_stays_small():
    files = [p for p in DATA.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 6_000_000


# --- the large Harbor job ----------------------------------------------------------------


def _bench_trials() -> list[dict]:
    """Every trial result.json of the large job, read with json only."""
    return [json.loads(p.read_text()) for p in sorted(BENCH.glob("*/result.json"))]


def _reward(trial: dict) -> float:
    vr = trial["verifier_result"]
    return 0.0 if vr is None else float(vr["rewards"]["reward"])  # Harbor 0.25: missing = 0


def test_bench_job_has_the_documented_shape():
    gen = _generator("make_harbor_jobs")
    trials = _bench_trials()
    models = [s["agent"][2] for s in gen.BENCH_AGENTS]
    assert len(models) >= 6 and len(gen.BENCH_TASKS) >= 40
    assert len(trials) == len(models) * len(gen.BENCH_TASKS) * gen.BENCH_ATTEMPTS
    per_pair_task: dict[tuple[str, str, str], int] = {}
    for t in trials:
        key = (t["agent_info"]["name"], t["config"]["agent"]["model_name"], t["task_name"])
        per_pair_task[key] = per_pair_task.get(key, 0) + 1
    assert set(per_pair_task.values()) == {gen.BENCH_ATTEMPTS}
    assert 3 <= gen.BENCH_ATTEMPTS <= 5
    # Harbor's model_info: the routing provider split off ("openrouter/anthropic/x" is
    # provider "openrouter", name "anthropic/x"), as LiteLLM's get_llm_provider does
    info = {t["config"]["agent"]["model_name"]: t["agent_info"]["model_info"] for t in trials}
    assert info["openrouter/anthropic/claude-opus-4.5"] == {
        "name": "anthropic/claude-opus-4.5", "provider": "openrouter"}
    assert info["openai/gpt-5"] == {"name": "gpt-5", "provider": "openai"}
    # tokens, cost, phase timings on every trial that ran an agent
    ran = [t for t in trials if t["agent_result"] is not None]
    assert len(ran) == len(trials) - len(gen.BENCH_ENV_FAILED)
    assert all(t["agent_result"]["cost_usd"] > 0 and t["agent_result"]["n_input_tokens"] > 0
               and t["agent_execution"] and t["verifier"] for t in ran)
    kinds = {t["exception_info"]["exception_type"] for t in trials if t["exception_info"]}
    assert kinds == {"AgentTimeoutError", "NonZeroAgentExitCodeError",
                     "EnvironmentStartTimeoutError"}
    # retries: Harbor removes the failed attempts' folders; job.log and n_retries keep them
    stats = json.loads((BENCH / "result.json").read_text())["stats"]
    retried = (BENCH / "job.log").read_text().count("Retrying in")
    assert stats["n_retries"] == retried > 0


def test_bench_tasks_range_from_always_solved_to_never_solved():
    gen = _generator("make_harbor_jobs")
    by_task: dict[str, list[float]] = {}
    for t in _bench_trials():
        by_task.setdefault(t["task_name"], []).append(_reward(t))
    rate = {task: sum(v) / len(v) for task, v in by_task.items()}
    assert {t for t, r in rate.items() if r == 1.0} >= set(gen.BENCH_EASY)
    assert {t for t, r in rate.items() if r == 0.0} >= set(gen.BENCH_IMPOSSIBLE)
    flaky = [t for t, r in rate.items() if 0.25 <= r <= 0.75]
    assert len(flaky) >= 5
    # the heatmap has structure: task rates spread out, agents differ
    table = mk.breakdown(mk.read_harbor_job(BENCH), by="task_name")
    assert dict(zip(table["task_name"], table["mean"], strict=True)) == pytest.approx(rate)


def test_bench_job_reproduces_harbor_metrics_and_pass_at_k():
    trials = mk.read_harbor_job(BENCH)
    stored = json.loads((BENCH / "result.json").read_text())["stats"]["evals"]
    assert mk.aggregate(trials, by="eval") == {k: v["metrics"][0] for k, v in stored.items()}
    assert mk.pass_at_k(trials, by="eval").harbor == {
        k: {int(n): p for n, p in v["pass_at_k"].items()} for k, v in stored.items()}


def _per_model(trials: list[dict]) -> dict[str, dict[str, float]]:
    """Mean reward, wall-clock duration (ms) and cost per model, by hand."""
    from datetime import datetime

    def ms(trial: dict) -> float:
        start, end = (datetime.fromisoformat(trial[k].replace("Z", "+00:00"))
                      for k in ("started_at", "finished_at"))
        return (end - start).total_seconds() * 1000

    out: dict[str, dict[str, list[float]]] = {}
    for t in trials:
        row = out.setdefault(t["agent_info"]["model_info"]["name"],
                             {"reward": [], "ms": [], "usd": []})
        row["reward"].append(_reward(t))
        row["ms"].append(ms(t))
        if t["agent_result"] is not None:
            row["usd"].append(t["agent_result"]["cost_usd"])
    return {m: {k: sum(v) / len(v) for k, v in cols.items()} for m, cols in out.items()}


def _dominated(points: dict[str, tuple[float, ...]]) -> set[str]:
    """Candidates another beats or equals on every axis (all to be minimised)."""
    return {c for c, p in points.items() for o, q in points.items()
            if o != c and all(b <= a for a, b in zip(p, q, strict=True)) and p != q}


def test_bench_pareto_front_has_several_points_and_a_dominated_pair():
    means = _per_model(_bench_trials())
    points = {m: (-v["reward"], v["ms"], v["usd"]) for m, v in means.items()}
    dominated = _dominated(points)
    assert dominated == {"qwen/qwen3-coder"} and len(points) - len(dominated) >= 4
    table = mk.plots.candidate_means(mk.read_harbor_job(BENCH),
                                     ["reward", "total_ms", "cost_usd"], by="model")
    mask = mk.plots.pareto_front(table, maximize=("reward",), minimize=("total_ms", "cost_usd"))
    assert {m for m, on in zip(table["model"], mask, strict=True) if not on} == dominated
    np.testing.assert_allclose(table.set_index("model")["reward"].sort_index(),
                               [means[m]["reward"] for m in sorted(means)])


def _paired_t(a: dict[str, float], b: dict[str, float]) -> tuple[float, float]:
    """Mean difference over shared units and its two-sided paired-t p-value (scipy)."""
    units = sorted(a)
    result = sps.ttest_rel([a[u] for u in units], [b[u] for u in units])
    return float(np.mean([a[u] - b[u] for u in units])), float(result.pvalue)


def _holm(pvalues: dict[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    order = sorted(pvalues, key=pvalues.get)
    out, running = {}, 0.0
    for i, pair in enumerate(order):
        running = max(running, min(1.0, (len(order) - i) * pvalues[pair]))
        out[pair] = running
    return out


def _tied_with_leader(per_unit: dict[str, dict[str, float]]) -> list[str]:
    """The leader and every candidate whose paired difference from it is not significant
    at 5 % after Holm's adjustment over all pairs (units: tasks or tickets)."""
    means = {c: sum(v.values()) / len(v) for c, v in per_unit.items()}
    leader = max(means, key=means.get)
    p = {(a, b): _paired_t(per_unit[a], per_unit[b])[1]
         for a, b in itertools.combinations(sorted(per_unit), 2)}
    holm = _holm(p)
    tied = [c for c in per_unit if c == leader
            or holm[tuple(sorted((leader, c)))] >= 0.05]  # type: ignore[index]
    return sorted(tied, key=lambda c: -means[c])


def test_bench_ties_by_model_match_a_paired_t_test_over_tasks():
    per_task: dict[str, dict[str, list[float]]] = {}
    for t in _bench_trials():
        model = t["agent_info"]["model_info"]["name"]
        per_task.setdefault(model, {}).setdefault(t["task_name"], []).append(_reward(t))
    means = {m: {task: sum(v) / len(v) for task, v in tasks.items()}
             for m, tasks in per_task.items()}
    expected = _tied_with_leader(means)
    assert expected == ["anthropic/claude-opus-4.5"]  # clearly best ...
    # ... and two pairs that a paired test over the 40 tasks cannot tell apart
    for a, b in (("claude-sonnet-4-5", "gpt-5"), ("claude-haiku-4-5", "gpt-5-mini")):
        assert _paired_t(means[a], means[b])[1] > 0.2
    trials = mk.read_harbor_job(BENCH)
    cmp = mk.compare_metrics(trials, {"pass rate": "reward"}, by="model")
    assert cmp.best()["pass rate"] == expected
    for a, b in (("claude-sonnet-4-5", "gpt-5"), ("claude-haiku-4-5", "gpt-5-mini")):
        result = mk.compare_runs(trials, a, b, by="model")
        assert result.difference.low < 0 < result.difference.high
        assert result.pvalue == pytest.approx(_paired_t(means[a], means[b])[1], rel=1e-9)


# --- the case table ------------------------------------------------------------------------


def _ticket_rewards(weights: dict[str, float]) -> dict[str, dict[str, float]]:
    """Composite reward per candidate and ticket, by hand: hyperbolic part scores
    (reference / (reference + x)), 0 for a part that was not measured."""
    total = sum(weights.values())
    out: dict[str, dict[str, float]] = {}
    for line in (DATA / "cases" / "tickets.jsonl").read_text().splitlines():
        r = json.loads(line)
        speed = 0.0 if r["latency_ms"] is None else 2000 / (2000 + r["latency_ms"])
        cost = 0.0 if r["cost_usd"] is None else 0.01 / (0.01 + r["cost_usd"])
        value = (weights["accuracy"] * r["accuracy"] + weights["speed"] * speed
                 + weights["cost"] * cost) / total
        out.setdefault(r["candidate"], {})[r["case_id"]] = value
    return out


def test_case_table_is_what_the_generator_documents():
    gen = _generator("make_cases")
    rows = [json.loads(x) for x in (DATA / "cases" / "tickets.jsonl").read_text().splitlines()]
    assert len(gen.CANDIDATES) >= 6 and len(rows) == 200 * len(gen.CANDIDATES)
    assert [r["candidate"] for r in rows[: len(gen.CANDIDATES)]] == list(gen.CANDIDATES)
    assert all(r["accuracy"] == float(r["output"] == r["expected"]["label"]) for r in rows)
    assert any(r["latency_ms"] is None for r in rows) and any(r["cost_usd"] is None for r in rows)
    # the trade-off: no candidate beats another on accuracy, latency and cost at once,
    # except the documented one
    means = {}
    for c in gen.CANDIDATES:
        mine = [r for r in rows if r["candidate"] == c]
        lat = [r["latency_ms"] for r in mine if r["latency_ms"] is not None]
        usd = [r["cost_usd"] for r in mine if r["cost_usd"] is not None]
        means[c] = (-sum(r["accuracy"] for r in mine) / len(mine), sum(lat) / len(lat),
                    sum(usd) / len(usd))
    assert _dominated(means) <= {gen.DOMINATED, *gen.TIED} and gen.DOMINATED in _dominated(means)
    assert len(means) - len(_dominated(means)) >= 4


def test_generator_reproduces_the_case_table(tmp_path):
    out = tmp_path / "tickets.jsonl"
    subprocess.run([sys.executable, str(DATA / "make_cases.py"), "-o", str(out)], check=True,
                   capture_output=True)
    assert out.read_bytes() == (DATA / "cases" / "tickets.jsonl").read_bytes()


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ({"accuracy": 0.7, "speed": 0.2, "cost": 0.1}, "tied"),
        ({"accuracy": 1.0, "speed": 0.0, "cost": 0.0}, "most accurate"),
        ({"accuracy": 0.0, "speed": 1.0, "cost": 0.0}, "fastest"),
    ],
    ids=["readme-spec", "accuracy-only", "speed-only"],
)
def test_tuner_verdicts_match_a_paired_t_test_over_tickets(weights, expected, capsys):
    pytest.importorskip("ipywidgets")
    gen = _generator("make_cases")
    truth = {"tied": list(gen.TIED), "most accurate": [gen.MOST_ACCURATE],
             "fastest": [gen.FASTEST]}[expected]
    by_hand = _tied_with_leader(_ticket_rewards(weights))
    assert sorted(by_hand) == sorted(truth)
    tuner = mk.widgets.tune_spec(mk.examples.load("tickets"), {**README_SPEC, "weights": weights},
                                 debounce_ms=0)
    capsys.readouterr()
    assert tuner.tied == by_hand
    if len(by_hand) == 1:
        assert tuner.verdict.startswith(f"best: {by_hand[0]} ")
    else:
        assert tuner.verdict.startswith("tied: " + ", ".join(by_hand) + " ")
    means = {c: sum(v.values()) / len(v) for c, v in _ticket_rewards(weights).items()}
    got = tuner.ranking.set_index("candidate")["reward"]
    assert all(math.isclose(got[c], m, rel_tol=1e-12) for c, m in means.items())


def test_compare_metrics_on_the_case_table_finds_the_same_tie():
    cases = mk.examples.load("tickets")
    scored = mk.RewardSpec.from_dict(README_SPEC).score_frame(cases)
    best = mk.compare_metrics(scored, {"reward": "reward", "accuracy": "accuracy"},
                              by="candidate").best()
    assert best["reward"] == _tied_with_leader(_ticket_rewards(README_SPEC["weights"]))
    assert len(best["reward"]) == 2
    assert best["accuracy"] == _tied_with_leader(
        _ticket_rewards({"accuracy": 1.0, "speed": 0.0, "cost": 0.0})) == ["large-cot"]
