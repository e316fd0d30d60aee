from __future__ import annotations

import concurrent.futures as cf
import math
import sys
import textwrap
import threading
import types

import numpy as np
import pandas as pd
import polars as pl
import pytest
from proc_helpers import wait_gone

import metrickit as mk
from metrickit import cli
from metrickit.scoring.scorers import read_cases, scorer_arity, validate_result

SEED_SPEC = {
    "weights": {"accuracy": 0.7, "speed": 0.2, "cost": 0.1},
    "accuracy": {},
    "speed": {"reference": 2000},
    "cost": {"reference": 0.01},
}
CASES = [
    {"case_id": "a", "message": "I was charged twice.", "output": "billing",
     "expected": {"label": "billing"}, "latency_ms": 800.0, "cost_usd": 0.002},
    {"case_id": "b", "message": "App crashes.", "output": "other",
     "expected": {"label": "technical"}, "latency_ms": 2000.0, "cost_usd": 0.01},
    {"case_id": "c", "message": "Where is my parcel?", "output": "shipping",
     "expected": {"label": "shipping"}, "latency_ms": None, "cost_usd": 0.0},
]


@pytest.fixture
def cases_dir(data_dir):
    return data_dir / "cases"


@pytest.fixture
def tickets(cases_dir):
    return cases_dir / "tickets.jsonl"


@pytest.fixture(autouse=True)
def _no_judge():
    previous = mk.set_judge(None)
    yield
    mk.set_judge(previous)


def returning(value):
    def score(input, output, expected=None):
        return value

    return score


# ---------------------------------------------------------------------------
# validate_result: the seed's table and the extra forms
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        (0.8, {"feedback": "Close. Missing the date."}),
        [1.0, {"feedback": "OK", "scores": {"format": 1.0}}],
        (np.float32(0.5), {"feedback": "", "scores": {"a": np.int64(1)}}),
        (1, {"feedback": "int scores are numbers", "extra": object()}),
    ],
)
def test_valid_return_values(value):
    assert validate_result(value) == []


INVALID = [
    (0.8, "returned a bare number 0.8 (float): there is no side information"),
    ((0.8, "Close."), "the side information is 'Close.' (str), not a dict"),
    ((0.8, {}), 'has no "feedback" string'),
    (("0.8", {"feedback": "OK"}), "the score is a string '0.8'; expected a number (not a string)"),
    ((0.8, {"feedback": "OK", "scores": {"a": "high"}}),
     "named score 'a' is 'high' (str); expected a number"),
    ((True, {"feedback": "OK"}), "the score is a bool True; a bool is not a score"),
    ((math.nan, {"feedback": "OK"}), "the score is nan; expected a finite number"),
    ((-math.inf, {"feedback": "OK"}), "the score is -inf; expected a finite number"),
    ((None, {"feedback": "OK"}), "the score is None (NoneType); expected a number"),
    ((0.8,), "returned a tuple of 1 item(s); expected a pair (2 items)"),
    ([0.8, {"feedback": "OK"}, "extra"], "returned a list of 3 item(s); expected a pair"),
    ((0.8, {"feedback": 3}), "feedback is 3 (int); expected a string"),
    ((0.8, {"feedback": "OK", "scores": [1.0]}), '"scores" is [1.0] (list); expected a dict'),
    ((0.8, {"feedback": "OK", "scores": {"a": math.inf}}), "named score 'a' is inf"),
    ((0.8, {"feedback": "OK", "scores": {"a": False}}), "named score 'a' is False (bool)"),
    (None, "returned None (NoneType); expected a pair"),
    ({"score": 1}, "returned {'score': 1} (dict); expected a pair"),
]


@pytest.mark.parametrize(("value", "reason"), INVALID, ids=[r for _, r in INVALID])
def test_each_invalid_form_has_its_own_reason(value, reason):
    problems = validate_result(value)
    assert len(problems) == 1, problems
    assert reason in problems[0]


def test_reasons_are_distinct_for_the_seed_table():
    seed = [v for v, _ in INVALID[:5]]
    reasons = [validate_result(v)[0] for v in seed]
    assert len(set(reasons)) == 5


def test_several_problems_are_all_listed():
    problems = validate_result(("x", {"scores": {"a": "b"}}))
    assert len(problems) == 3


# ---------------------------------------------------------------------------
# check_scorer with functions (in this process)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "reason"), INVALID, ids=[r for _, r in INVALID])
def test_check_scorer_reports_every_invalid_form(value, reason):
    report = mk.check_scorer(returning(value), CASES)
    assert not report.ok
    assert len(report.entries) == 3
    assert all(reason in e.problems[0] for e in report.entries)
    assert reason in str(report)


def test_check_scorer_accepts_a_valid_scorer_and_runs_three_cases(tickets):
    calls = []

    def score(input, output, expected=None):
        calls.append((input, output, expected))
        return float(output == expected["label"]), {"feedback": "checked"}

    report = mk.check_scorer(score, tickets)
    assert report.ok and report.arity == 3
    assert len(calls) == 3
    assert calls[0] == ({"message": "Are you hiring in Berlin?"}, "other", {"label": "other"})
    # spread over the table (first, middle, last row), labelled with their row numbers
    table = pd.read_json(tickets, lines=True)
    last = len(table) - 1
    assert [e.index for e in report.entries] == [0, round(last / 2), last]
    assert [e.key["case_id"] for e in report.entries] == [
        table["case_id"].iloc[i] for i in (0, round(last / 2), last)]
    assert f"case {last} [case_id=" in str(report)
    assert "contract OK: 3 of 3 cases valid" in str(report)
    assert "<table>" in report._repr_html_()
    assert [e.index for e in mk.check_scorer(score, tickets, n=5).entries] == [
        round(i * last / 4) for i in range(5)]
    assert [e.index for e in mk.check_scorer(score, table.head(2), n=5).entries] == [0, 1]
    assert [e.index for e in mk.check_scorer(score, tickets, n=1).entries] == [0]


def test_two_parameter_scorer_is_called_with_input_and_output():
    seen = []

    def score(input, output):
        seen.append((input, output))
        return 1.0, {"feedback": "ok"}

    report = mk.check_scorer(score, CASES)
    assert report.ok and report.arity == 2
    # Without an `input` column, the input is every field that is not output/expected/key.
    assert seen[0] == ({"message": "I was charged twice."}, "billing")
    assert "called as score(input, output)" in str(report)


def _kw(input, output, *, strict):
    return 1.0, {"feedback": ""}


@pytest.mark.parametrize(
    ("scorer", "reason"),
    [
        (lambda x: (1.0, {"feedback": ""}), "takes 1 positional parameter(s)"),
        (lambda: (1.0, {"feedback": ""}), "takes 0 positional parameter(s)"),
        (lambda a, b, c, d: (1.0, {"feedback": ""}), "needs 4 arguments"),
        (_kw, "required keyword-only parameter(s) ['strict']"),
        (42, "the scorer is 42 (int), not a function"),
    ],
)
def test_unusable_signature_is_reported_before_any_call(scorer, reason):
    report = mk.check_scorer(scorer, CASES)
    assert not report.ok
    assert report.entries == ()
    assert reason in report.problems[0]
    assert "cannot be used" in str(report)


def test_signature_variants_that_work():
    assert scorer_arity(lambda *args: None) == (3, None)
    assert scorer_arity(lambda i, o, e=None, extra=1: None) == (3, None)
    assert scorer_arity(lambda i, o, *, flag=False: None) == (2, None)
    assert scorer_arity(print)[1] is None


def test_exception_reports_type_message_and_the_scorers_own_line():
    def score(input, output, expected=None):
        data = {"x": 1}
        return data[output], {"feedback": ""}  # KeyError here

    line = score.__code__.co_firstlineno + 2
    report = mk.check_scorer(score, CASES, n=1)
    (problem,) = report.entries[0].problems
    assert problem.startswith("raised KeyError: 'billing'")
    assert f"test_scorers.py:{line}: return data[output]" in problem


def test_exception_inside_a_library_points_at_the_scorers_call():
    import json

    def score(input, output, expected=None):
        return json.loads(output), {"feedback": ""}

    line = score.__code__.co_firstlineno + 1
    (problem,) = mk.check_scorer(score, CASES, n=1).entries[0].problems
    assert "raised JSONDecodeError" in problem
    assert f"test_scorers.py:{line}: return json.loads(output)" in problem


def test_sys_exit_in_a_function_scorer_is_reported_not_fatal():
    def score(input, output, expected=None):
        sys.exit(3)

    report = mk.check_scorer(score, CASES)
    assert [e.problems for e in report.entries] == [
        ("called sys.exit(3); a scorer must return a pair, not exit",)
    ] * 3


def test_a_call_past_the_timeout_is_reported_and_the_rest_still_run():
    release = threading.Event()

    def score(input, output, expected=None):
        if output == "other":
            release.wait(10)
        return 1.0, {"feedback": "ok"}

    try:
        report = mk.check_scorer(score, CASES, timeout=0.2)
    finally:
        release.set()
    ok, hung, ok2 = report.entries
    assert ok.ok and ok2.ok
    assert hung.timed_out and "timed out: no result within 0.2 s" in hung.problems[0]


@pytest.mark.parametrize("timeout", [601, 0, -1, math.nan, "60", True])
def test_timeouts_outside_the_contract_are_refused(timeout):
    with pytest.raises(mk.ScorerError, match="at most 600"):
        mk.check_scorer(returning((1.0, {"feedback": ""})), CASES, timeout=timeout)
    with pytest.raises(mk.ScorerError, match="at most 600"):
        mk.score_cases(returning((1.0, {"feedback": ""})), CASES, timeout=timeout,
                       progress=False)


def test_timeout_600_and_bad_n():
    assert mk.check_scorer(returning((1.0, {"feedback": ""})), CASES, timeout=600).ok
    with pytest.raises(mk.ScorerError, match="n is 0"):
        mk.check_scorer(returning((1.0, {"feedback": ""})), CASES, n=0)


def test_measurements_of_the_case_are_visible_to_the_scorer():
    seen = []

    def score(input, output, expected=None):
        seen.append((mk.observation(), mk.service_cost()))
        return 1.0, {"feedback": ""}

    mk.check_scorer(score, CASES)
    assert seen == [(800.0, 0.002), (2000.0, 0.01), (None, 0.0)]
    assert mk.observation() is None


def test_invalid_reward_spec_of_a_function_scorer_is_reported(tmp_path):
    path = tmp_path / "bad_spec.py"
    path.write_text(textwrap.dedent("""
        REWARD_SPEC = {"weights": {"accuracy": 1, "speed": 1}, "speed": {"reference": 1},
                       "cost": {"reference": 1}}
        def score(input, output, expected=None):
            return 1.0, {"feedback": "ok"}
    """))
    score, _ = mk.load_scorer(path)
    report = mk.check_scorer(score, CASES)
    assert not report.ok
    assert report.problems == ("REWARD_SPEC: weights must name accuracy, speed and cost; "
                               "missing ['cost'] (give 0 to leave a part out)",)


# ---------------------------------------------------------------------------
# Scorer files: loading, REWARD_SPEC from the syntax tree, separate process
# ---------------------------------------------------------------------------


def test_read_reward_spec_without_running_the_file(tmp_path, cases_dir):
    assert mk.read_reward_spec(cases_dir / "reward_spec.py") == SEED_SPEC
    assert mk.read_reward_spec(cases_dir / "exact_match.py") is None
    path = tmp_path / "metric.py"
    path.write_text("raise SystemExit('must not run')\nREWARD_SPEC = {'weights': {}}\n"
                    "REWARD_SPEC: dict = {'weights': {'accuracy': 1}}\n")
    assert mk.read_reward_spec(path) == {"weights": {"accuracy": 1}}
    path.write_text("W = 0.5\nREWARD_SPEC = {'weights': {'accuracy': W}}\n")
    with pytest.raises(mk.ScorerError, match=r"metric.py:2: REWARD_SPEC is not a plain literal"):
        mk.read_reward_spec(path)
    path.write_text("REWARD_SPEC = {\n")
    with pytest.raises(mk.ScorerError, match="syntax error"):
        mk.read_reward_spec(path)
    with pytest.raises(mk.ScorerError, match="cannot read"):
        mk.read_reward_spec(tmp_path / "missing.py")


def test_load_scorer_runs_seed_files_unchanged(cases_dir):
    score, spec = mk.load_scorer(cases_dir / "reward_spec.py")
    assert spec == SEED_SPEC
    value = score({}, "billing", {"label": "billing"})
    assert validate_result(value) == []
    import skynet

    assert skynet.reward is mk.reward
    score, spec = mk.load_scorer(cases_dir / "exact_match.py")
    assert spec is None
    assert score({}, "a", {"label": "b"}) == (0.0, {"feedback": "Expected 'b', got 'a'."})


def test_load_scorer_errors(tmp_path):
    path = tmp_path / "metric.py"
    path.write_text("x = 1\n\nraise ValueError('bad config')\n")
    with pytest.raises(mk.ScorerError, match=r"raised ValueError: bad config \(at metric.py:3"):
        mk.load_scorer(path)
    path.write_text("def scorer(input, output):\n    return 1.0, {}\n")
    with pytest.raises(mk.ScorerError, match="defines no function 'score'"):
        mk.load_scorer(path)
    with pytest.raises(mk.ScorerError, match="no such scorer file"):
        mk.load_scorer(tmp_path / "nope.py")


@pytest.mark.parametrize(
    ("name", "cases"),
    [("exact_match", "tickets.jsonl"), ("json_fields", "extraction.jsonl"),
     ("reward_spec", "tickets.jsonl")],
)
def test_seed_examples_pass_the_contract_check_as_files(cases_dir, name, cases):
    report = mk.check_scorer(cases_dir / f"{name}.py", cases_dir / cases)
    assert report.ok, str(report)
    assert len(report.entries) == 3
    if name == "reward_spec":
        assert report.reward_spec == SEED_SPEC
        assert set(report.entries[0].scores) == {"accuracy", "speed", "cost"}


def test_broken_example_file_gets_one_reason_per_case(cases_dir, tickets):
    rows, _ = read_cases(tickets)
    picks = [next(r for r in rows if r["accuracy"] == 1.0),
             next(r for r in rows if r["output"].lower() == r["expected"]["label"] != r["output"]),
             next(r for r in rows if r["output"].lower() != r["expected"]["label"])]
    report = mk.check_scorer(cases_dir / "broken_metric.py", picks)
    assert not report.ok
    reasons = [e.problems for e in report.entries]
    assert "returned a bare number 1.0" in reasons[0][0]
    assert "the score is a string '0.5'" in reasons[1][0]
    assert "the side information is" in reasons[2][0] and "not a dict" in reasons[2][0]


def test_judge_scorer_file_without_and_with_a_judge(cases_dir, tickets):
    report = mk.check_scorer(cases_dir / "llm_judge.py", tickets, n=1)
    (problem,) = report.entries[0].problems
    assert "raised JudgeNotConfiguredError" in problem and "set_judge" in problem
    assert "llm_judge.py:7" in problem

    prompts = []

    def judge(prompt, input=None):  # a closure: it stays in this process
        prompts.append((prompt, input))
        return "PASS. The label matches the message."

    mk.set_judge(judge)
    report = mk.check_scorer(cases_dir / "llm_judge.py", tickets, n=2)
    assert report.ok, str(report)
    assert report.entries[0].feedback == "PASS. The label matches the message."
    assert len(prompts) == 2 and prompts[0][1].startswith("Question: Are you hiring")


MISBEHAVING = '''
import os, sys, time

def score(input, output, expected=None):
    mode = input["mode"]
    print("noise on stdout must not break the report")
    if mode == "hang":
        time.sleep(60)
    if mode == "exit":
        sys.exit(4)
    if mode == "os_exit":
        os._exit(7)
    if mode == "crash":
        import ctypes
        ctypes.string_at(0)
    return 1.0, {"feedback": f"fine: {mode}"}
'''


@pytest.mark.slow
def test_path_scorer_survives_hang_exit_os_exit_and_crash(tmp_path):
    path = tmp_path / "metric.py"
    path.write_text(MISBEHAVING)
    modes = ["ok", "hang", "exit", "os_exit", "crash", "ok again"]
    cases = [{"mode": m, "output": "x"} for m in modes]
    report = mk.check_scorer(path, cases, n=len(cases), timeout=1.5)
    entries = dict(zip(modes, report.entries, strict=True))
    assert entries["ok"].ok and entries["ok"].feedback == "fine: ok"
    assert entries["ok again"].ok
    assert entries["hang"].timed_out
    assert "timed out: no result within 1.5 s (the scorer process was stopped)" in \
        entries["hang"].problems[0]
    assert entries["exit"].problems == ("called sys.exit(4); a scorer must return a pair, "
                                        "not exit",)
    assert "exited with code 7 without returning a result" in entries["os_exit"].problems[0]
    crash = entries["crash"].problems[0]
    assert "killed by SIGSEGV (the interpreter crashed) at metric.py:15" in crash
    assert "Fatal Python error: Segmentation fault" in crash
    assert "Extension modules" not in crash
    assert not report.ok and len(report.failed) == 4


def test_path_scorer_reward_spec_is_checked_as_the_file_defines_it(tmp_path):
    path = tmp_path / "metric.py"
    # Not a literal (read_reward_spec refuses it), but a valid spec once the file runs.
    path.write_text(textwrap.dedent("""
        from skynet import reward
        SPEED = 1500
        REWARD_SPEC = {"weights": {"accuracy": 1, "speed": 1, "cost": 0},
                       "speed": {"reference": SPEED}, "cost": {"reference": 0.01}}
        def score(input, output, expected=None):
            return reward(REWARD_SPEC, 1.0, "ok")
    """))
    report = mk.check_scorer(path, CASES)
    assert report.ok, str(report)
    assert report.reward_spec["speed"] == {"reference": 1500}
    assert report.entries[0].scores["speed"] == pytest.approx(1500 / 2300)
    path.write_text(path.read_text().replace("SPEED = 1500", "SPEED = -1"))
    report = mk.check_scorer(path, CASES, n=1)
    assert report.problems == ("REWARD_SPEC: speed.reference is -1 (int); expected a positive "
                               "finite number",)
    assert "raised SpecError" in report.entries[0].problems[0]


def test_path_scorer_that_cannot_load_is_reported(tmp_path):
    path = tmp_path / "metric.py"
    path.write_text("import os\nos._exit(2)\n")
    report = mk.check_scorer(path, CASES)
    assert not report.ok and report.entries == ()
    assert "loading the file ended the process" in report.problems[0]
    assert "exited with code 2" in report.problems[0]
    path.write_text("def score(input):\n    return 1.0, {'feedback': ''}\n")
    report = mk.check_scorer(path, CASES)
    assert "takes 1 positional parameter(s)" in report.problems[0]
    path.write_text("import missing_module_xyz\n")
    report = mk.check_scorer(path, CASES)
    assert "raised ModuleNotFoundError" in report.problems[0]


# ---------------------------------------------------------------------------
# score_cases
# ---------------------------------------------------------------------------


def test_score_cases_exact_match_agrees_with_the_accuracy_column(cases_dir, tickets):
    score, _ = mk.load_scorer(cases_dir / "exact_match.py")
    scored = mk.score_cases(score, tickets, progress=False)
    cases = pd.read_json(tickets, lines=True)
    assert len(scored) == len(tickets.read_text().splitlines()) == 200 * 6
    assert list(scored.columns) == ["case_id", "candidate", "latency_ms", "cost_usd", "score",
                                    "feedback", "scorer_ms", "error"]
    assert scored["case_id"].tolist() == cases["case_id"].tolist()
    assert scored["score"].tolist() == cases["accuracy"].tolist()
    assert scored["error"].isna().all()
    assert (scored["scorer_ms"] >= 0).all()


def test_score_cases_reward_spec_reads_measurements_and_matches_score_frame(cases_dir, tickets):
    scored = mk.score_cases(cases_dir / "reward_spec.py", tickets, progress=False, workers=4)
    # json.loads, as the scorer sees the values (pandas' read_json rounds floats differently).
    rows, _ = read_cases(tickets)
    expected = mk.RewardSpec.from_dict(SEED_SPEC).score_frame(pd.DataFrame(rows))
    np.testing.assert_array_equal(scored["score"].to_numpy(), expected["reward"].to_numpy())
    np.testing.assert_array_equal(scored["score_speed"].to_numpy(),
                                  expected["speed_score"].to_numpy())
    unmeasured = scored[scored["latency_ms"].isna()]
    assert len(unmeasured) > 0
    assert unmeasured["feedback"].str.contains("latency was not measured").all()


def test_score_cases_named_scores_become_columns(cases_dir):
    scored = mk.score_cases(cases_dir / "json_fields.py", cases_dir / "extraction.jsonl",
                            backend="polars", progress=False)
    assert isinstance(scored, pl.DataFrame)
    assert scored["score_format"].to_list() == [1.0, 1.0, 0.0, 1.0]
    assert scored["score_fields"].to_list()[:2] == [1.0, pytest.approx(2 / 3)]


def test_failing_cases_score_zero_keep_their_error_and_none_is_lost():
    release = threading.Event()

    def score(input, output, expected=None):
        n = input["n"]
        if n % 5 == 1:
            raise RuntimeError(f"judge unavailable for {n}")
        if n % 5 == 2:
            return 0.7  # no side information
        if n == 3:
            release.wait(10)
        return 0.9, {"feedback": f"case {n}", "scores": {"a": 1.0}}

    cases = pl.DataFrame({"case_id": [f"c{i}" for i in range(20)], "n": list(range(20)),
                          "output": ["x"] * 20})
    try:
        scored = mk.score_cases(score, cases, timeout=0.3, progress=False)
    finally:
        release.set()
    assert isinstance(scored, pl.DataFrame)
    assert scored["case_id"].to_list() == [f"c{i}" for i in range(20)]
    by_n = {i: row for i, row in enumerate(scored.iter_rows(named=True))}
    assert by_n[1]["score"] == 0.0 and by_n[1]["error"].startswith(
        "raised RuntimeError: judge unavailable for 1")
    assert by_n[2]["score"] == 0.0 and "bare number" in by_n[2]["error"]
    assert by_n[3]["score"] == 0.0 and by_n[3]["error"].startswith("timed out")
    assert by_n[0] | {"scorer_ms": None} == {
        "case_id": "c0", "score": 0.9, "feedback": "case 0", "score_a": 1.0,
        "scorer_ms": None, "error": None}
    assert math.isnan(by_n[1]["score_a"])
    summary = mk.score_summary(scored)
    assert summary == {"cases": 20, "mean_score": pytest.approx(0.9 * 11 / 20), "failed": 9,
                       "timed_out": 1}


class CountingExecutor(cf.Executor):
    """Runs each call at once in the caller's thread, counting submissions."""

    def __init__(self):
        self.submitted = 0

    def submit(self, fn, /, *args, **kwargs):
        self.submitted += 1
        future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


def test_any_executor_is_accepted_and_executor_failures_keep_the_case(cases_dir, tickets):
    executor = CountingExecutor()
    scored = mk.score_cases(cases_dir / "exact_match.py", tickets, executor=executor,
                            progress=False)
    n_cases = len(tickets.read_text().splitlines())  # 200 tickets x 6 candidates
    assert executor.submitted == n_cases == len(scored) == 1200

    class Failing(CountingExecutor):
        def submit(self, fn, /, *args, **kwargs):
            future = cf.Future()
            future.set_exception(OSError("worker lost"))
            return future

    scored = mk.score_cases(cases_dir / "exact_match.py", CASES, executor=Failing(),
                            progress=False)
    assert scored["error"].tolist() == ["the executor failed: OSError: worker lost"] * 3
    assert scored["score"].tolist() == [0.0] * 3


def test_score_cases_with_a_process_pool(cases_dir):
    # Stand-in for a cluster executor: the scorer and the call travel by pickle.
    import multiprocessing

    with cf.ProcessPoolExecutor(max_workers=1,
                                mp_context=multiprocessing.get_context("spawn")) as pool:
        scored = mk.score_cases(_picklable_scorer, CASES, executor=pool, timeout=None,
                                progress=False)
    assert scored["score"].tolist() == [1.0, 0.0, 1.0]


def _picklable_scorer(input, output, expected=None):
    return float(output == expected["label"]), {"feedback": "ok"}


def test_score_cases_refuses_an_unusable_scorer_and_bad_tables(tmp_path):
    with pytest.raises(mk.ScorerError, match=r"cannot score cases: .* takes 1 positional"):
        mk.score_cases(lambda x: x, CASES, progress=False)
    with pytest.raises(mk.ScorerError, match="case 0 has no 'output' field"):
        mk.score_cases(_picklable_scorer, [{"q": 1}], progress=False)
    path = tmp_path / "cases.jsonl"
    path.write_text('{"output": 1}\n\n{"output": \n')
    with pytest.raises(mk.ScorerError, match=r"cases.jsonl:3: not valid JSON"):
        mk.score_cases(_picklable_scorer, path, progress=False)
    with pytest.raises(mk.ScorerError, match="clash"):
        mk.score_cases(_picklable_scorer, CASES, keys=["score"], progress=False)


def test_score_cases_shows_a_progress_bar(capsys):
    mk.score_cases(_picklable_scorer, CASES, progress=True)
    assert "scoring cases" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# skynet, llm, DSPy
# ---------------------------------------------------------------------------


def test_llm_without_a_judge_says_how_to_configure_one():
    from metrickit.scoring.skynet import llm

    with pytest.raises(mk.JudgeNotConfiguredError, match=r"metrickit.set_judge\(judge\)"):
        llm("Answer PASS or FAIL.", input="x")
    with pytest.raises(TypeError, match="needs a callable"):
        mk.set_judge("gpt")  # type: ignore[arg-type]
    mk.set_judge(lambda prompt, **kw: f"{prompt}|{kw['input']}")
    assert llm("P", input="I") == "P|I"


def test_skynet_install_makes_the_module_importable(monkeypatch):
    import metrickit.scoring.skynet as shim

    monkeypatch.delitem(sys.modules, "skynet", raising=False)
    assert shim.install() is shim
    from skynet import observation, reward, service_cost  # type: ignore[import-not-found]

    assert reward is mk.reward and observation is mk.observation
    assert service_cost is mk.service_cost


class Example:
    def __init__(self, inputs, labels):
        self._inputs, self._labels = inputs, labels

    def inputs(self):
        return types.SimpleNamespace(toDict=lambda: dict(self._inputs))

    def labels(self):
        return dict(self._labels)


class Prediction(dict):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.__dict__.update(kw)


def test_as_dspy_metric_with_stand_in_objects(monkeypatch, cases_dir):
    score, _ = mk.load_scorer(cases_dir / "exact_match.py")
    metric = mk.as_dspy_metric(score)  # no dspy needed yet
    monkeypatch.setitem(sys.modules, "dspy", types.SimpleNamespace(Prediction=Prediction))
    example = Example({"message": "charged twice"}, {"label": "billing"})
    result = metric(example, {"label": "billing"}, None, "predict", None)
    assert result == {"score": 1.0, "feedback": "Correct."}
    wrong = metric(example, Prediction(label="other"))
    assert wrong.score == 0.0 and wrong.feedback == "Expected 'billing', got 'other'."

    seen = []

    def two(input, output):
        seen.append((input, output))
        return 0.5, {"feedback": "half"}

    both = mk.as_dspy_metric(two, output_field="answer")
    assert both(example, {"answer": "A", "reasoning": "R"}).score == 0.5
    assert seen == [({"message": "charged twice"}, "A")]
    all_fields = mk.as_dspy_metric(two)
    all_fields(example, {"answer": "A", "reasoning": "R"})
    assert seen[-1][1] == {"answer": "A", "reasoning": "R"}

    bad = mk.as_dspy_metric(returning(0.8))
    with pytest.raises(mk.ScorerError, match="broke the contract: returned a bare number"):
        bad(example, {"label": "x"})
    with pytest.raises(mk.ScorerError, match="takes 1 positional"):
        mk.as_dspy_metric(lambda x: x)


def test_as_dspy_metric_without_dspy_fails_only_when_called(monkeypatch, cases_dir):
    monkeypatch.setitem(sys.modules, "dspy", None)
    metric = mk.as_dspy_metric(mk.load_scorer(cases_dir / "exact_match.py")[0])
    with pytest.raises(ImportError, match="pip install dspy"):
        metric(Example({}, {"label": "a"}), {"label": "a"})


@pytest.mark.slow
def test_as_dspy_metric_with_real_dspy(cases_dir, tickets, monkeypatch):
    # DSPy imports LiteLLM, which fetches a model price list over the network at import
    # unless told to use its bundled copy; the test makes no network call.
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import dspy
        from dspy.adapters import JSONAdapter
        from dspy.utils import DummyLM
    except ImportError:  # pragma: no cover - a dev dependency
        pytest.fail("DSPy is a dev dependency: pip install -e '.[dev]'")
    metric = mk.as_dspy_metric(mk.load_scorer(cases_dir / "exact_match.py")[0])
    rows, _ = read_cases(tickets)
    devset = [
        dspy.Example(message=r["input"]["message"], label=r["expected"]["label"])
        .with_inputs("message")
        for r in rows[:6]
    ]
    # 1. inside a real dspy.Evaluate: a no-network LM answers right on 4 of 6 cases
    answers = [{"label": ex.label if i not in (1, 4) else "nonsense"}
               for i, ex in enumerate(devset)]
    with dspy.context(lm=DummyLM(answers)):
        result = dspy.Evaluate(devset=devset, metric=metric, num_threads=1)(
            dspy.Predict("message -> label"))
    assert [float(r[2]) for r in result.results] == [1, 0, 1, 1, 0, 1]
    assert all(isinstance(r[2], dspy.Prediction) for r in result.results)
    assert result.results[1][2].feedback == f"Expected {devset[1].label!r}, got 'nonsense'."
    assert result.score == round(100 * 4 / 6, 2)  # DSPy reports a percentage, 2 decimals

    # 2. GEPA's feedback metric: called as metric(gold, pred, trace, pred_name, pred_trace)
    calls = []

    def recording(gold, pred, trace=None, pred_name=None, pred_trace=None):
        out = metric(gold, pred, trace, pred_name, pred_trace)
        calls.append((pred_name, pred_trace, out.score, out.feedback))
        return out

    example, prediction = devset[0], dspy.Prediction(label=devset[0].label)
    direct = metric(example, prediction, None, "self", [(None, example.inputs(), prediction)])
    assert (direct.score, direct.feedback) == (1.0, "Correct.")
    student = DummyLM([{"label": "billing"}] * 200)
    reflection = DummyLM([{"new_instruction": "Answer with the routing label only."}] * 50,
                         adapter=JSONAdapter())
    with dspy.context(lm=student):
        gepa = dspy.GEPA(metric=metric, max_metric_calls=10, reflection_lm=reflection,
                         num_threads=1, reflection_minibatch_size=2)
        gepa.metric_fn = recording  # GEPA checked the five-argument signature on metric
        optimized = gepa.compile(dspy.Predict("message -> label"), trainset=devset[:2],
                                 valset=devset[2:4])
    assert isinstance(optimized, dspy.Module)
    per_predictor = [c for c in calls if c[0] is not None]
    assert per_predictor, calls  # GEPA asked for feedback on a predictor
    for _, pred_trace, score, feedback in per_predictor:
        assert pred_trace and score in (0.0, 1.0)
        assert feedback == "Correct." or feedback.startswith("Expected ")


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def test_cli_check_scorer(cases_dir, tickets, capsys):
    assert cli.main(["check-scorer", str(cases_dir / "exact_match.py"), "--cases",
                     str(tickets)]) == 0
    assert "contract OK: 3 of 3" in capsys.readouterr().out
    assert cli.main(["check-scorer", str(cases_dir / "broken_metric.py"), "--cases",
                     str(tickets), "--n", "1", "--timeout", "30"]) == 1
    assert "returned a bare number 1.0" in capsys.readouterr().out
    assert cli.main(["check-scorer", str(cases_dir / "exact_match.py"), "--cases",
                     str(tickets), "--timeout", "601"]) == 1
    assert "at most 600" in capsys.readouterr().err


def test_bad_measurement_is_the_cases_error_not_a_zero_part():
    def score(input, output, expected=None):
        return mk.reward(
            {"weights": {"accuracy": 1, "speed": 1, "cost": 1}, "speed": {"reference": 1000},
             "cost": {"reference": 0.01}}, 1.0, "ok")

    cases = [
        {"input": {}, "output": 1, "latency_ms": "fast", "cost_usd": 0.01},
        {"input": {}, "output": 1, "latency_ms": 1000, "cost_usd": 0.01},
    ]
    scored = mk.score_cases(score, cases, progress=False)
    assert len(scored) == 2
    assert "latency_ms is 'fast' (str)" in scored["error"].iloc[0]
    assert scored["score"].iloc[0] == 0
    assert scored["score"].iloc[1] == pytest.approx((1 + 0.5 + 0.5) / 3)


# ---------------------------------------------------------------------------
# Path scorers: what they start, what they print, what they are given
# ---------------------------------------------------------------------------

STARTS_A_CHILD = '''
import subprocess, sys

def score(input, output, expected=None):
    code = "import os, time; open(%r, 'w').write(str(os.getpid())); time.sleep(60)"
    subprocess.run([sys.executable, "-c", code % input["pidfile"]])
    return 1.0, {"feedback": "waited"}
'''


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["library", "cli"])
def test_path_scorer_timeout_kills_the_processes_it_started(tmp_path, entry, capsys):
    # The scorer's own child kept the pipes open: the call used to return after 60 s.
    import json
    import time

    path = tmp_path / "metric.py"
    path.write_text(STARTS_A_CHILD)
    pidfile = tmp_path / "pid"
    case = {"input": {"pidfile": str(pidfile)}, "output": "x"}
    start = time.monotonic()
    if entry == "library":
        report = mk.check_scorer(path, [case], timeout=2)
        assert report.entries[0].timed_out
    else:
        cases = tmp_path / "cases.jsonl"
        cases.write_text(json.dumps(case) + "\n")
        assert cli.main(["check-scorer", str(path), "--cases", str(cases),
                         "--timeout", "2"]) == 1
        assert "timed out: no result within 2 s" in capsys.readouterr().out
    assert time.monotonic() - start < 15  # generous: the timeout is 2 s, the sleep 60 s
    assert wait_gone(int(pidfile.read_text()))  # the whole group was killed


def test_path_scorer_stderr_is_read_in_bounded_memory(tmp_path):
    # 100 MB on stderr without a newline, then a crash that quotes it: the caller used to
    # hold the whole line (peak +200 MB for 100 MB) before clipping it to 500 characters.
    path = tmp_path / "metric.py"
    path.write_text(textwrap.dedent('''
        import os, sys
        def score(input, output, expected=None):
            if input["n"]:
                sys.stderr.write("e" * input["n"] + "\\nlast words\\n")
                sys.stderr.flush()
                os._exit(3)
            return 1.0, {"feedback": "ok"}
    '''))
    probe = textwrap.dedent(f'''
        import resource, metrickit as mk
        path = {str(path)!r}
        assert mk.check_scorer(path, [{{"n": 0, "output": 1}}]).ok  # imports, warm
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        report = mk.check_scorer(path, [{{"n": 100_000_000, "output": 1}}], timeout=60)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) // 1024)
        print(report.entries[0].problems[0])
    ''')
    import subprocess

    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    growth_mb, problem = proc.stdout.split("\n", 1)
    assert int(growth_mb) < 40, growth_mb  # was ~200 MB; chunks are 64 kB
    assert "exited with code 3" in problem
    assert "e" * 500 + "... (99999500 more characters) | last words" in problem
    assert len(problem) < 2000


class _Point(tuple):
    pass


IDENTITY_SCORER = '''
import datetime, decimal

def score(input, output, expected=None):
    checks = {
        "int key": 1 in input["by_id"],
        "tuple": input["pair"] == (1, 2) and isinstance(input["pair"], tuple),
        "set": input["tags"] == {"a", "b"},
        "datetime": isinstance(input["when"], datetime.datetime),
        "decimal": isinstance(output, decimal.Decimal),
        "bytes": expected == b"\\x00\\xff",
    }
    failed = [name for name, ok in checks.items() if not ok]
    return float(not failed), {"feedback": "missing: " + ", ".join(failed)}
'''


def test_check_scorer_path_gives_the_scorer_what_score_cases_gives_it(tmp_path):
    # The check used to send JSON (int keys became strings, tuples lists, the rest str()):
    # the same scorer scored 0.0 in the check and 1.0 in score_cases.
    import datetime
    import decimal

    path = tmp_path / "metric.py"
    path.write_text(IDENTITY_SCORER)
    cases = [{"input": {"by_id": {1: "one"}, "pair": (1, 2), "tags": {"a", "b"},
                        "when": datetime.datetime(2025, 1, 2, 3, 4)},
              "output": decimal.Decimal("0.1"), "expected": b"\x00\xff"}]
    report = mk.check_scorer(path, cases)
    scored = mk.score_cases(path, cases, progress=False)
    assert report.ok, str(report)
    assert report.entries[0].score == scored["score"].iloc[0] == 1.0
    na = mk.check_scorer(path, [{**cases[0], "input": {**cases[0]["input"], "pair": pd.NA}}])
    assert na.entries[0].feedback == "missing: tuple"


def test_check_scorer_path_refuses_a_case_it_cannot_send_naming_the_field(tmp_path):
    path = tmp_path / "metric.py"
    path.write_text(IDENTITY_SCORER)
    lock = threading.Lock()
    report = mk.check_scorer(path, [{"input": {"ok": 1, "deep": [0, {"lock": lock}]},
                                     "output": 1},
                                    {"input": {"pair": _Point((1, 2))}, "output": 1}], n=2)
    first, second = (e.problems[0] for e in report.entries)
    assert first.startswith("case data: input['deep'][1]['lock'] is _thread.lock, which "
                            "cannot be sent to the scorer process"), first
    # a class the scorer process cannot import (defined in a test module, a notebook)
    assert second.startswith("case data: the scorer process cannot rebuild the case's "
                             "objects (ModuleNotFoundError"), second


def test_score_cases_refuses_a_bad_workers_count_with_its_own_error():
    # workers=0 raised the thread pool's bare ValueError
    for workers in (0, -1, 1.5, True):
        with pytest.raises(mk.ScorerError, match=f"workers is {workers!r}; expected a positive"):
            mk.score_cases(returning((1.0, {"feedback": ""})), CASES, workers=workers,
                           progress=False)


def test_decimal_and_fraction_scores_say_convert_with_float():
    from decimal import Decimal
    from fractions import Fraction

    problems = validate_result((Decimal("0.5"), {"feedback": "", "scores": {"a": Fraction(1, 2)}}))
    assert problems == [
        "the score is Decimal('0.5') (Decimal); expected a number (an int or a float: convert "
        "it with float())",
        "named score 'a' is Fraction(1, 2) (Fraction); expected a number (an int or a float: "
        "convert it with float())",
    ]
    assert validate_result(("0.5", {"feedback": ""}))[0].endswith("(not a string)")
    assert "float()" not in validate_result((1j, {"feedback": ""}))[0]


def test_an_unknown_backend_is_refused_before_any_case_is_scored():
    called = []

    def score(input, output, expected=None):
        called.append(input)
        return 1.0

    cases = [{"input": {"n": i}, "output": "x"} for i in range(3)]
    with pytest.raises(mk.ScorerError, match=r"backend is 'arrow'; expected 'pandas' or"):
        mk.score_cases(score, cases, backend="arrow", progress=False)
    assert called == []  # not scored first and refused after
