"""``mk.report`` / ``metrickit report``: the numbers in the page are metrickit's own, NA
stays missing, nothing in the page points to the network, and the provenance is checkable.

Expected values are computed here from the same trial table with metrickit's functions, so
the tests hold when the example data is regenerated.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from report_page import parse as _parse

import metrickit as mk
from metrickit.cli import main as cli
from metrickit.compute.stats import task_labels
from metrickit.errors import MetrickitError
from metrickit.reporting.html import report
from metrickit.reporting.numbers import fixed, significant

SPEC = {
    "weights": {"accuracy": 0.7, "speed": 0.2, "cost": 0.1},
    "accuracy": {},
    "speed": {"reference": 300_000},
    "cost": {"reference": 0.5},
}
EXTERNAL = re.compile(r"""(?:src|href|action|srcset)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


@pytest.fixture(scope="module")
def trials():
    return mk.read_harbor_job(mk.examples.path("harbor_jobs"), progress=False)


@pytest.fixture(scope="module")
def html_report(trials, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    before = datetime.now(UTC).replace(microsecond=0)
    report(trials, path, value="reward", spec=mk.RewardSpec.from_dict(SPEC))
    return path, _parse(path), before


@pytest.fixture(scope="module")
def md_report(trials, tmp_path_factory):
    path = tmp_path_factory.mktemp("report_md") / "report.md"
    report(trials, path, value="correctness")
    return path


def _finished(trials):
    return trials[trials["_status"].astype(str) != "running"]


def _valued(trials):
    valued = _finished(trials)
    valued = valued[valued["reward"].notna()].copy()
    valued["task"] = task_labels(valued, "task_name").to_numpy()
    return valued


def _tie_rule(valued, by="candidate", value="reward"):
    """The report's rule, spelled out with metrickit's public functions: the leader (rank
    1, then P(best)), each other candidate against it by compare_runs on the tasks both
    ran, Holm over those comparisons (shown, not deciding); tied for best: the candidates
    of compare_metrics' best_group (the 95 % confidence set for the best), leader first."""
    ranking = mk.compare_metrics(valued, {value: value}, by=by, cluster="task")
    table = ranking.table.assign(order=range(len(ranking.table))).sort_values(
        ["rank", "p_best", "order"], ascending=[True, False, True]).set_index("group")
    leader, *others = list(table.index)
    runs, pvalues = {}, []
    for name in others:
        try:
            runs[name] = mk.compare_runs(valued, name, leader, by=by, task="task", value=value)
        except mk.StatsError:
            runs[name] = None
        pvalues.append(runs[name].pvalue if runs[name] is not None else np.nan)
    p_holm = dict(zip(others, mk.ranking.holm(pvalues), strict=True))
    best = [leader] + [n for n in others if table.loc[n, "best_group"]]
    return table, leader, others, runs, p_holm, best


def test_headline_numbers_and_verdict_are_metrickits(trials, html_report):
    _, page, _ = html_report
    expected = mk.breakdown(trials, by="candidate", value="reward").set_index("candidate")
    valued = _valued(trials)
    table, _, _, _, _, best = _tie_rule(valued)
    rows = page.rows("headline")
    assert len(rows) == len(expected)
    ranks = table["rank"]
    shown = [(r["candidate"][0], r["rank"][0]) for r in rows if r["rank"][1] != "na"]
    assert [int(rank) for _, rank in shown] == sorted(int(rank) for _, rank in shown)
    assert {name: int(rank) for name, rank in shown} == ranks.to_dict()
    for row in rows:
        name = row["candidate"][0]
        want = expected.loc[name]
        if np.isfinite(want["mean"]):
            assert row["mean reward"][0] == fixed(want["mean"])
            assert row["95% CI"][0] == f"[{fixed(want['ci_low'])}, {fixed(want['ci_high'])}]"
        assert row["trials"][0] == f"{int(want['n']):,}"
        assert row["errors"][0] == str(int(want["n_errors"]))
    notes = expected["note"].fillna("").astype(str)
    # the note column is there exactly when some candidate has a note, and shows it
    assert ("note" in rows[0]) == (notes != "").any()
    for row in rows if "note" in rows[0] else []:
        assert row["note"][0] == notes[row["candidate"][0]]
    verdict = " ".join(" ".join(page.text).split())
    if len(best) == 1:
        assert f"Best: {best[0]} (best at 95 %)." in verdict
    else:
        assert f"Tied for best: {', '.join(best)} (none is best at 95 %)." in verdict
    marks = page.marks["headline"][1:]
    marked = {r["candidate"][0] for r, m in zip(rows, marks, strict=True) if m}
    assert marked == set(best)
    assert {m for m in marks if m} == ({"best"} if len(best) == 1 else {"tied"})


def test_missing_value_is_shown_as_missing_never_zero(trials, html_report):
    _, page, _ = html_report
    finished = _finished(trials)
    na = sorted(e for e, g in finished.groupby("candidate") if g["reward"].isna().all())
    assert na, "the example job should have evaluations without a 'reward' key"
    rows = {r["candidate"][0]: r for r in page.rows("headline")}
    for name in na:
        cell = rows[name]["mean reward"]
        assert cell == ("missing", "na")
        assert rows[name]["95% CI"] == ("missing", "na")
    passk = {r["candidate"][0]: r for r in page.rows("pass-at-k-table")}
    for name in na:
        assert passk[name]["pass@1"] == ("missing", "na")


def test_markdown_variant_has_images_beside_it_and_missing_cells(trials, md_report):
    text = md_report.read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert images, "no image in the Markdown"
    for relative in images:
        assert relative.startswith("report_files/")
        data = (md_report.parent / relative).read_bytes()
        assert data.startswith(b"\x89PNG")
    finished = _finished(trials)
    na = [e for e, g in finished.groupby("candidate") if g["correctness"].isna().all()]
    lines = {line for line in text.splitlines() if line.startswith("| ")}
    for name in na:
        escaped = name.replace("_", "\\_")
        # the headline row: no rank, no mean, no interval
        headline = [line for line in lines if line.startswith(f"| *missing* | {escaped} |")]
        assert len(headline) == 1
        assert headline[0].split(" | ")[2:4] == ["*missing*", "*missing*"]
        assert not any(f"| {escaped} | 0.000 |" in line for line in lines)
    assert "data:image" not in text and "<img" not in text


def test_pass_at_k_matches(trials, html_report):
    _, page, _ = html_report
    table = mk.pass_at_k(_finished(trials), by="candidate", value="reward").table
    rows = {r["candidate"][0]: r for r in page.rows("pass-at-k-table")}
    assert len(table)
    for _, want in table.iterrows():
        assert rows[want["candidate"]][f"pass@{int(want['k'])}"][0] == fixed(want["pass_at_k"])


def test_flips_are_compare_runs_of_the_two_best(trials, html_report):
    _, page, _ = html_report
    text = " ".join(" ".join(page.text).split())
    a = re.search(r"A: (.+?)\. B: (.+?)\. Tasks won", text)
    assert a is not None
    leader, other = a.group(1), a.group(2)
    _, want_leader, others, _, _, _ = _tie_rule(_valued(trials))
    assert leader == want_leader and other == others[0]
    cmp = mk.compare_runs(_valued(trials), other, leader, by="candidate", task="task",
                          value="reward")
    assert f"{other} − {leader} = {fixed(cmp.difference.estimate, sign=True)}" in text
    assert f"over {cmp.n_tasks} paired tasks (paired t, p = {significant(cmp.pvalue)};" in text
    got = [r["task"][0] for r in page.rows("flips-table")] if "flips-table" in page.tables \
        else []
    assert got == [str(t) for t in cmp.flips["task"]]
    assert got, "the example's two best should flip on some task"
    for row, (_, want) in zip(page.rows("flips-table"), cmp.flips.iterrows(), strict=True):
        assert (row["mean A"][0], row["mean B"][0]) == (fixed(want["mean_b"], 2),
                                                        fixed(want["mean_a"], 2))


def test_errors_and_costs(trials, html_report):
    _, page, _ = html_report
    finished = _finished(trials)
    counts = finished["exception_type"].dropna().astype(str).value_counts()
    rows = {r["type"][0]: r for r in page.rows("exception-type")}
    assert set(rows) == set(counts.index)
    for kind, n in counts.items():
        assert rows[kind]["trials"][0] == f"{n:,}"
    costs = {r["candidate"][0]: r for r in page.rows("costs-table")}
    for name, part in finished.groupby("candidate"):
        total = part["cost_usd"].astype(float).sum()
        shown = float(costs[name]["total cost"][0].lstrip("$").replace(",", ""))
        assert shown == pytest.approx(total, rel=5e-3)
        assert costs[name]["output tokens"][0] == f"{int(part['n_output_tokens'].sum()):,}"


def test_spec_section_ranks_by_the_spec(trials, html_report):
    _, page, _ = html_report
    spec = mk.RewardSpec.from_dict(SPEC)
    valued = _finished(trials)
    valued = valued[valued["reward"].notna()]
    scored = spec.score_frame(
        pd.DataFrame({"accuracy": valued["reward"].astype(float).to_numpy(),
                      "latency_ms": valued["total_ms"].astype(float).to_numpy(),
                      "cost_usd": valued["cost_usd"].astype(float).to_numpy()}))
    means = scored.groupby(valued["candidate"].to_numpy())["reward"].mean()
    rows = page.rows("spec-ranking")
    assert [r["candidate"][0] for r in rows] == list(means.sort_values(ascending=False).index)
    for row in rows:
        assert row["spec reward"][0] == fixed(means[row["candidate"][0]])
    text = " ".join(page.text)
    assert '"speed": {' in text and "300000" in text


def test_provenance(trials, html_report):
    _, page, before = html_report
    facts = {r[0][0]: r[1][0] for r in page.tables["provenance-facts"][1:]}
    assert facts["metrickit"] == mk.__version__
    assert facts["command"].startswith("metrickit.report(trials, path=")
    assert "value='reward'" in facts["command"]
    generated = datetime.strptime(facts["generated (UTC)"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=UTC)
    assert before <= generated <= datetime.now(UTC) + timedelta(seconds=1)
    jobs = {r["job folder"][0]: r["sha256 of result.json"][0] for r in page.rows("jobs")}
    expected = {str(Path(d).parent) for d in trials["trial_dir"].dropna()}
    assert set(jobs) == expected
    for folder, digest in jobs.items():
        assert digest == hashlib.sha256((Path(folder) / "result.json").read_bytes()).hexdigest()
    checksums = {(r["task"][0], r["task checksum"][0]) for r in page.rows("task-checksums")}
    labels = task_labels(trials, "task_name")
    for i in (0, len(trials) // 2, len(trials) - 1):
        folder = trials["trial_dir"].iloc[i]
        recorded = json.loads((Path(folder) / "result.json").read_text())
        assert (labels.iloc[i], recorded["task_checksum"]) in checksums


def test_html_is_self_contained(html_report):
    path, page, _ = html_report
    text = path.read_text(encoding="utf-8")
    assert not EXTERNAL.search(text)
    assert "http://" not in text and "https://" not in text
    assert "<script" not in text
    assert "Content-Security-Policy" in text
    assert len(page.images) >= 2  # the bars and the trade-off; the heatmap is a table
    assert len(page.tables["heatmap"]) > 1
    for image in page.images:
        src = image["src"] or ""
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG")
        assert image["alt"]


def test_names_are_escaped(tmp_path):
    df = pd.DataFrame({"task": ["q1", "q2", "q3"] * 2,
                       "run": ["<b>bold</b>"] * 3 + ["a|b"] * 3,
                       "ok": [1, 1, 0, 1, 0, 0]})
    trials = mk.trials_from_frame(df, task="task", candidate="run", reward="ok")
    html = report(trials, tmp_path / "r.html", by="eval").read_text()
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    md = report(trials, tmp_path / "r.md", by="eval").read_text()
    assert "a\\|b" in md


def test_polars_input_and_a_dict_spec_is_refused(tmp_path):
    job = mk.examples.path("harbor_jobs") / "2025-06-02__10-00-00"
    trials = mk.read_harbor_job(job, backend="polars", progress=False)
    out = report(trials, tmp_path / "p.html", title="one job")
    assert "<title>one job</title>" in out.read_text()
    with pytest.raises(MetrickitError, match=r"RewardSpec\.from_dict"):
        report(trials, tmp_path / "q.html", spec=SPEC)
    with pytest.raises(MetrickitError, match="not a column"):
        report(trials, tmp_path / "q.html", value="nope")


def test_cli(tmp_path, capsys):
    job = str(mk.examples.path("harbor_jobs") / "2025-06-02__10-00-00")
    scorer = tmp_path / "metric.py"
    scorer.write_text(f"REWARD_SPEC = {SPEC!r}\n\ndef score(input, output, expected=None):\n"
                      "    return 1.0, {'feedback': 'ok'}\n")
    out = tmp_path / "r.html"
    argv = ["report", job, "-o", str(out), "--spec", str(scorer)]
    assert cli(argv) == 0
    assert capsys.readouterr().out == f"wrote {out}\n"
    page = _parse(out)
    facts = {r[0][0]: r[1][0] for r in page.tables["provenance-facts"][1:]}
    assert facts["command"] == "metrickit " + " ".join(argv)
    assert "spec-ranking" in page.tables
    no_spec = tmp_path / "plain.py"
    no_spec.write_text("def score(input, output, expected=None):\n    return 1.0\n")
    assert cli(["report", job, "-o", str(tmp_path / "x.html"), "--spec", str(no_spec)]) == 1
    err = capsys.readouterr().err
    assert f"{no_spec}: defines no REWARD_SPEC" in err and not (tmp_path / "x.html").exists()
    bad = tmp_path / "bad.py"
    bad.write_text("REWARD_SPEC = {'weights': {'accuracy': -1}}\n")
    assert cli(["report", job, "-o", str(tmp_path / "y.html"), "--spec", str(bad)]) == 1
    assert "weights" in capsys.readouterr().err
    assert cli(["report", "/no/such/job", "-o", str(tmp_path / "z.html")]) == 1
    assert "/no/such/job" in capsys.readouterr().err
    assert cli(["report", job, "-o", str(tmp_path / "r.md")]) == 0
    assert (tmp_path / "r_files" / "heatmap.png").is_file()


def test_the_demo_report_ranks_the_example_job_by_its_spec(demo_report):
    """`make demo` writes out/report.html with data/harbor_jobs_spec.py: its spec is valid and
    scores the example job's candidates in the middle of the scale, not all near 0 or 1."""
    page = demo_report.page
    rows = page.tables["spec-ranking"][1:]
    assert len(rows) == 6
    # 40 tasks each: no candidate has a note, so the headline has no empty note column
    assert len(page.rows("headline")) == 6 and "note" not in page.rows("headline")[0]
    scores = [float(r[2][0]) for r in rows]
    assert all(0.2 < s < 0.8 for s in scores), scores


def test_templates_are_package_data():
    from importlib.resources import files

    folder = files("metrickit.reporting") / "templates"
    for name in ("report.html.j2", "report.md.j2", "_blocks.html.j2", "report.css.j2"):
        assert (folder / name).is_file(), name


@pytest.mark.slow
def test_inspect_logs_provenance(tmp_path, inspect_fixture_logs):
    from inspect_ai.log import read_eval_log

    logs = sorted((inspect_fixture_logs / "eval").glob("*.eval"))
    assert logs
    out = tmp_path / "inspect.html"
    assert cli(["report", str(inspect_fixture_logs / "eval"), "-o", str(out), "--value",
                "exact"]) == 0
    page = _parse(out)
    facts = {r[0][0]: r[1][0] for r in page.tables["provenance-facts"][1:]}
    versions = {read_eval_log(str(p), header_only=True).eval.packages["inspect_ai"] for p in logs}
    assert facts["Inspect AI"] == ", ".join(sorted(versions))
    shown = {r["log"][0]: r["sha256"][0] for r in page.rows("logs")}
    assert shown == {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in logs}


def test_one_candidate_is_not_called_best(tmp_path):
    job = mk.examples.path("harbor_jobs") / "2025-06-02__10-00-00"
    trials = mk.read_harbor_job(job, progress=False)
    assert trials["eval"].nunique() == 1
    text = " ".join(report(trials, tmp_path / "one.md").read_text().split())
    assert "nothing to rank" in text
    assert "(best at 95 %)" not in text and "Tied for best" not in text
    assert "orange: best at 95 %" not in text  # no colour legend for one candidate


def test_trial_tables_from_files_give_the_jobs_numbers(tmp_path):
    """A trial table saved as CSV/parquet reports what its job folder reports (a trial's
    _status "null" is not read as a missing value); a plain tidy table needs only
    task_name and the value column."""
    job = mk.examples.path("harbor_jobs") / "2025-07-14__09-00-00"
    trials = mk.read_harbor_job(job, progress=False)
    assert (trials["_status"] == "null").any()
    pages = {}
    for name in ("job", "trials.csv", "trials.parquet"):
        source = job if name == "job" else tmp_path / name
        if name.endswith(".csv"):
            trials.to_csv(source, index=False)
        elif name.endswith(".parquet"):
            trials.to_parquet(source)
        assert cli(["report", str(source), "-o", str(tmp_path / f"{name}.html")]) == 0
        pages[name] = _parse(tmp_path / f"{name}.html")
    for name in ("trials.csv", "trials.parquet"):
        for table in ("outcomes", "headline", "pass-at-k-table"):
            assert pages[name].tables[table] == pages["job"].tables[table], (name, table)
    tidy = pd.DataFrame({"task_name": ["a", "b", "a", "b"], "system": ["x", "x", "y", "y"],
                         "score": [1.0, 0.0, 1.0, 1.0]})
    tidy.to_csv(tmp_path / "tidy.csv", index=False)
    out = tmp_path / "tidy.html"
    assert cli(["report", str(tmp_path / "tidy.csv"), "--value", "score", "--by", "system",
                "-o", str(out)]) == 0
    rows = {r["candidate"][0]: r for r in _parse(out).rows("headline")}
    assert rows["y"]["mean score"][0] == "1.000" and rows["x"]["mean score"][0] == "0.500"


def test_other_trial_folders_and_what_is_not_one(tmp_path, capsys):
    runs = mk.examples.path("terminal_bench_run").parent  # a folder of Terminal-Bench runs
    assert cli(["report", str(runs), "-o", str(tmp_path / "tb.html")]) == 0
    expected = mk.read_terminal_bench(mk.examples.path("terminal_bench_run"))
    assert len(_parse(tmp_path / "tb.html").rows("headline")) == \
        expected["candidate"].nunique()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli(["report", str(empty), "-o", str(tmp_path / "x.html")]) == 1
    err = capsys.readouterr().err
    assert "no Harbor job found" in err and "nor does it hold Inspect AI logs" in err


def test_against_the_leader_explains_the_tie_rule(trials, html_report):
    """Each row is compare_runs of the candidate and the leader on the tasks both ran; the
    verdict's ties are exactly the rows that are not significant (or may be best)."""
    _, page, _ = html_report
    valued = _valued(trials)
    table, leader, others, runs, p_holm, best = _tie_rule(valued)
    rows = page.rows("against-leader")
    assert [r["candidate"][0] for r in rows] == others
    tasks = valued.groupby("candidate")["task"].agg(set)
    assert any(runs[n] is None for n in others), "the example has candidates on other tasks"
    tied_by_test = set()
    for row in rows:
        name = row["candidate"][0]
        cmp = runs[name]
        left_out = len(tasks[name] ^ tasks[leader])
        assert row["left out"][0] == str(left_out)
        if cmp is None:
            assert row["reward − leader"][0] == "no task in common"
            assert row["paired tasks"][0] == "0" and row["significant"][0] == "not tested"
            continue
        assert row["reward − leader"][0] == fixed(cmp.difference.estimate, sign=True)
        assert row["paired tasks"][0] == str(cmp.n_tasks) == str(len(tasks[name] & tasks[leader]))
        assert row["p"][0] == significant(cmp.pvalue)
        assert row["p (Holm)"][0] == significant(p_holm[name])
        low, high = (float(x) for x in row["95% CI"][0].strip("[]").split(", "))
        assert -1 <= low <= high <= 1  # a difference of 0/1 rates
        if row["significant"][0] == "no":
            tied_by_test.add(name)
    may_be_best = set(table.index[table["rank_low"] == 1])
    assert set(best) == {leader} | tied_by_test | may_be_best
    verdict = " ".join(" ".join(page.text).split())
    assert (f"Best: {leader} (best at 95 %)." if len(best) == 1
            else f"Tied for best: {', '.join(best)} (none is best at 95 %).") in verdict


def test_the_report_says_how_it_counts_and_refuses_what_it_cannot_write(trials, tmp_path):
    out = report(trials, tmp_path / "agents.html", value="reward", by="agent")
    text = " ".join(" ".join(_parse(out).text).split())
    finished = _finished(trials)
    no_reward = finished[(finished["_status"] == "null") & finished["reward"].notna()]
    assert len(no_reward) and (no_reward["reward"] == 0).all()
    assert f"{len(no_reward)} finished trials without a reward" in text
    valued = finished[finished["reward"].notna()]
    pooled = valued.groupby("agent")["eval"].nunique()
    assert f"pool(s) several evaluations (agent, model, data set) under one 'agent': up to " \
        f"{pooled.max()}" in text
    with pytest.raises(MetrickitError, match=r"\.txt is neither"):
        report(trials, tmp_path / "report.txt")
    assert not (tmp_path / "report.txt").exists()
    bad = trials.assign(reward=trials["reward"].astype(object))
    bad.loc[bad.index[0], "reward"] = "high"
    with pytest.raises(MetrickitError, match="'reward' holds a value that is not a number"):
        report(bad, tmp_path / "bad.html", value="reward")


def test_flips_name_a_shared_log_file_once_with_its_count(tmp_path):
    logs = mk.examples.path("inspect_logs")
    out = tmp_path / "inspect.html"
    assert cli(["report", str(logs), "-o", str(out), "--value", "exact"]) == 0
    rows = _parse(out).rows("flips-table")
    assert rows
    for row in rows:
        for cell in (row["trials of A"][0], row["trials of B"][0]):
            names = [n.split(" (")[0] for n in cell.split(", ")]
            assert len(names) == len(set(names)) == 1 and cell.endswith(" trials)"), cell


def test_spec_notes_name_an_error_accuracy_and_only_weighted_unmeasured_parts(tmp_path):
    job = mk.examples.path("harbor_jobs") / "2025-07-14__09-00-00"
    trials = mk.read_harbor_job(job, progress=False)
    assert trials["cost_usd"].isna().any()
    plain = mk.RewardSpec.from_dict({"weights": {"accuracy": 1, "speed": 1, "cost": 0},
                                     "accuracy": {}, "speed": {"reference": 300_000},
                                     "cost": {"reference": 1.0}})
    error = mk.RewardSpec.from_dict({"weights": {"accuracy": 1, "speed": 0, "cost": 1},
                                     "accuracy": {"reference": 0.1},
                                     "speed": {"reference": 300_000},
                                     "cost": {"reference": 1.0}})
    texts = {}
    for name, spec in (("plain", plain), ("error", error)):
        out = report(trials, tmp_path / f"{name}.html", value="reward", spec=spec)
        texts[name] = " ".join(" ".join(_parse(out).text).split())
    assert "read as an error (lower is better)" not in texts["plain"]
    assert "no measured cost" not in texts["plain"]  # cost weighs 0 there
    assert "read as an error (lower is better)" in texts["error"]
    assert "no measured cost" in texts["error"]
