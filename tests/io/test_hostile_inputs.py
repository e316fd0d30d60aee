"""Hostile and odd inputs to the trial readers (issue #25, round 3): every reader raises only
metrickit's documented errors, naming the file, field and value; no traceback reaches a CLI
user. Each named item is pinned, then each reader is fuzzed (truncated at many bytes, a
wrong type in every field)."""

from __future__ import annotations

import json
import sys
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest

import metrickit as mk
from metrickit import cli
from metrickit.errors import MetrickitError, MetrickitWarning, TrialSourceError
from metrickit.io.trials import reading

sys.path.insert(0, str(Path(__file__).parent))
from tb1_fixture import write_run

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
OTEL = REALDATA / "otel-bench" / "results.json"

#: values put in place of a field: wrong types, out-of-range numbers, odd text
NASTY: list[Any] = [
    None, True, False, -1, 2**64, -(2**63), 1e308, 1.5, "garbage", "", "\ud800", [], {},
    [1], {"a": 1}, "9999-12-31T23:59:59-23:00", "0001-01-01T00:00:00+14:00", 10**400,
]


def _only_documented(read: Any) -> MetrickitError | None:
    """Run a read; a metrickit error is returned, success gives None, anything else fails."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MetrickitWarning)
            read()
    except MetrickitError as exc:
        return exc
    return None


# -- the one place -----------------------------------------------------------------------------


def test_reading_names_where_field_and_value() -> None:
    match = r"^f\.json: results\[0\]: field 'n': value '12k' \(str\): cannot be read \(ValueError"
    with pytest.raises(TrialSourceError, match=match), reading("f.json: results[0]") as at:
        int(at.at("n", "12k"))
    with pytest.raises(KeyboardInterrupt), reading("f"):
        raise KeyboardInterrupt
    with pytest.raises(ImportError), reading("f"):  # a missing optional dependency stays
        raise ImportError("no inspect_ai")


# -- Terminal-Bench ----------------------------------------------------------------------------


@pytest.fixture()
def tb_run(tmp_path: Path) -> Path:
    return write_run(tmp_path)[0]


def _set_trial(run: Path, field: str, value: Any) -> None:
    results = json.loads((run / "results.json").read_text())
    results["results"][0][field] = value
    (run / "results.json").write_text(json.dumps(results))


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("trial_started_at", "garbage", "an ISO 8601 timestamp"),
    ("trial_ended_at", 1723750104, "an ISO 8601 timestamp"),
    ("total_input_tokens", "12k", "a whole number of tokens"),
    ("total_input_tokens", -5, "a whole number of tokens"),
    ("total_output_tokens", True, "a whole number of tokens"),
    ("total_output_tokens", 2**64, "a whole number of tokens"),
    ("failure_mode", ["agent_timeout"], "text"),
    ("task_id", {"id": 1}, "non-empty text"),
    ("trial_name", 7, "non-empty text"),
    ("agent_started_at", "0001-01-01T00:00:00+14:00", "an ISO 8601 timestamp"),
])
def test_terminal_bench_malformed_fields(tb_run: Path, field: str, value: Any,
                                         expected: str) -> None:
    _set_trial(tb_run, field, value)
    with pytest.raises(TrialSourceError) as info:
        mk.read_terminal_bench(tb_run)
    text = str(info.value)
    assert text.startswith(f"{tb_run / 'results.json'}: results[0]")
    assert f"field {field!r} is {value!r}" in text and expected in text


def test_terminal_bench_a_list_where_the_results_object_belongs(tb_run: Path) -> None:
    results = json.loads((tb_run / "results.json").read_text())
    results["results"][1] = [results["results"][1]]
    (tb_run / "results.json").write_text(json.dumps(results))
    with pytest.raises(TrialSourceError, match=r"results\[1\]: \[\{.*\(list\) is not a "
                                               "TrialResults object"):
        mk.read_terminal_bench(tb_run)


def test_terminal_bench_whole_float_token_counts_are_read(tb_run: Path) -> None:
    _set_trial(tb_run, "total_input_tokens", 1200.0)
    tokens = mk.read_terminal_bench(tb_run)["n_input_tokens"].dropna().tolist()
    assert 1200 in tokens


def test_terminal_bench_fuzz_every_field(tb_run: Path) -> None:
    """Every field of a trial, of the run's results and of run_metadata.json set to every
    nasty value: a trial table or a TrialSourceError, never another exception."""
    results_file, meta_file = tb_run / "results.json", tb_run / "run_metadata.json"
    results, meta = json.loads(results_file.read_text()), json.loads(meta_file.read_text())
    tried = refused = 0
    for where, fields in (("trial", list(results["results"][0])), ("results", list(results)),
                          ("meta", list(meta))):
        for field in fields:
            for value in NASTY:
                r, m = json.loads(json.dumps(results)), dict(meta)
                target = r["results"][0] if where == "trial" else r if where == "results" else m
                target[field] = value
                try:
                    results_file.write_text(json.dumps(r))
                    meta_file.write_text(json.dumps(m))
                except ValueError:  # 10**400 past the digit limit: not JSON Python writes
                    continue
                tried += 1
                refused += _only_documented(lambda: mk.read_terminal_bench(tb_run)) is not None
    assert tried > 400 and refused > 100


def test_terminal_bench_fuzz_truncations(tb_run: Path) -> None:
    """The run's results.json and a trial's own results.json cut at many bytes."""
    own = next(tb_run.glob("*/*/results.json"))
    for file, step in ((tb_run / "results.json", 11), (own, 1)):
        whole = file.read_bytes()
        for cut in range(0, len(whole), step):
            file.write_bytes(whole[:cut])
            error = _only_documented(lambda: mk.read_terminal_bench(tb_run))
            if file == own:
                # a trial listed in the run's results.json is read from there
                assert error is None or str(file) in str(error)
            else:
                assert error is not None and str(file) in str(error)
        file.write_bytes(whole)


# -- lm-eval -----------------------------------------------------------------------------------


DATE = "2024-05-01T10-00-00.000000"


def _lm_eval(tmp_path: Path, lines: list[bytes]) -> Path:
    folder = tmp_path / "out" / "tiny__model"
    folder.mkdir(parents=True)
    (folder / f"results_{DATE}.json").write_text(json.dumps({
        "results": {"tiny": {"acc,none": 0.5}}, "config": {"model": "hf", "model_args":
                                                            "pretrained=tiny/model"},
        "model_name": "tiny/model", "versions": {"tiny": 1.0}, "lm_eval_version": "0.4.8",
    }))
    (folder / f"samples_tiny_{DATE}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return tmp_path / "out"


GOOD = [b'{"doc_id": 0, "filter": "none", "metrics": ["acc"], "acc": 1.0}',
        b'{"doc_id": 1, "filter": "none", "metrics": ["acc"], "acc": 0.0}']


def test_lm_eval_reads_the_hand_made_output(tmp_path: Path) -> None:
    trials = mk.read_lm_eval_samples(_lm_eval(tmp_path, GOOD))
    assert trials["acc"].tolist() == [1.0, 0.0]


@pytest.mark.parametrize(("line", "message"), [
    ('{"doc_id": 2, "metrics": ["acc"], "acc": 1.0, "q": "caf\xe9"}'.encode("latin-1"),
     r":2: not UTF-8 \(bytes b'\\xe9' at byte \d+ of the line.*re-save the file as UTF-8"),
    (b'{"doc_id": 2, "metrics": 5, "acc": 1.0}',
     r":2: field 'metrics' is 5 \(int\); expected a list of metric names"),
    (b'{"doc_id": 2, "metrics": [["acc"]], "acc": 1.0}',
     r":2: field 'metrics' is \[\['acc'\]\] \(list\); expected a list of metric names"),
    (b'{"doc_id": [2], "metrics": ["acc"], "acc": 1.0}', r":2: field 'doc_id' is \[2\]"),
    (b'{"doc_id": 2, "filter": 3, "metrics": ["acc"], "acc": 1.0}', r":2: field 'filter' is 3"),
    (b'{"doc_id": 2, "metrics": ["acc"], "acc": 1.0, "x": ' + b"[" * 100_000 + b"]" * 100_000
     + b"}", r":2: not a JSON line"),
])
def test_lm_eval_malformed_lines(tmp_path: Path, line: bytes, message: str) -> None:
    out = _lm_eval(tmp_path, [GOOD[0], line])
    with pytest.raises(TrialSourceError, match=r"samples_tiny_.*\.jsonl" + message):
        mk.read_lm_eval_samples(out)


def test_lm_eval_results_file_fields_of_the_wrong_type(tmp_path: Path) -> None:
    out = _lm_eval(tmp_path, GOOD)
    results_file = next(out.rglob("results_*.json"))
    results = json.loads(results_file.read_text())
    for field, value in (("model_name", ["a"]), ("lm_eval_version", 4)):
        results_file.write_text(json.dumps({**results, field: value}))
        with pytest.raises(TrialSourceError, match=f"field {field!r} is"):
            mk.read_lm_eval_samples(out)


def test_lm_eval_fuzz(tmp_path: Path) -> None:
    """Every field of a record and of the results file set to every nasty value, and the
    samples file cut at every byte."""
    out = _lm_eval(tmp_path, GOOD)
    samples = next(out.rglob("samples_*.jsonl"))
    results_file = next(out.rglob("results_*.json"))
    record, results = json.loads(GOOD[0]), json.loads(results_file.read_text())
    for field in [*record, "filter"]:
        for value in NASTY:
            try:
                samples.write_text(json.dumps({**record, field: value}) + "\n")
            except ValueError:
                continue
            _only_documented(lambda: mk.read_lm_eval_samples(out))
    samples.write_bytes(b"\n".join(GOOD))
    for field in results:
        for value in NASTY:
            try:
                results_file.write_text(json.dumps({**results, field: value}))
            except ValueError:
                continue
            _only_documented(lambda: mk.read_lm_eval_samples(out))
    results_file.write_text(json.dumps(results))
    whole = b"\n".join(GOOD)
    for cut in range(len(whole)):
        samples.write_bytes(whole[:cut])
        _only_documented(lambda: mk.read_lm_eval_samples(out))


# -- trials_from_frame -------------------------------------------------------------------------


def test_trials_from_frame_token_count_of_1e20() -> None:
    df = pd.DataFrame({"t": ["a"], "r": [1], "tok": [1e20]})
    with pytest.raises(TrialSourceError, match=r"column 'tok', row 0: 1e\+20 \(float\); "
                                               "expected a whole number of tokens from 0 to "
                                               r"2\*\*53"):
        mk.trials_from_frame(df, task="t", reward="r", input_tokens="tok")


@pytest.mark.parametrize("make", [
    lambda: pd.DataFrame({"t": ["a"], "r": pd.array([2**64 - 1], dtype="uint64")}),
    lambda: pd.DataFrame({"t": ["a"], "r": np.array([2**64 - 1], dtype=np.uint64)}),
    lambda: pl.DataFrame({"t": ["a"], "r": pl.Series([2**64 - 1], dtype=pl.UInt64)}),
    lambda: pd.DataFrame({"t": ["a"], "r": np.array([-(2**63)], dtype=np.int64)}),
    lambda: pl.DataFrame({"t": ["a"], "r": pl.Series([-(2**63)], dtype=pl.Int64)}),
])
def test_trials_from_frame_integers_past_2_53_are_refused(make: Any) -> None:
    with pytest.raises(TrialSourceError, match=r"reward column 'r', row 0: -?\d{19,20} \(int\); "
                                               r"expected \|x\| <= 2\*\*53"):
        mk.trials_from_frame(make(), task="t", reward="r")


def test_trials_from_frame_times_trial_dir_and_exception_type() -> None:
    df = pd.DataFrame({
        "t": ["a", "b", "c"], "r": [1, 0, None],
        "start": ["2026-01-11T19:28:25.796872Z", "2026-01-11T19:43:27Z", None],
        "end": [datetime(2026, 1, 11, 19, 35, 39), "2026-01-11T19:49:02+01:00", None],
        "dir": ["jobs/a", "jobs/b", None], "kind": ["", "AgentTimeoutError", None],
        "err": ["", "", "boom"],
    })
    for backend in ("pandas", "polars"):
        t = mk.trials_from_frame(df, task="t", reward="r", started_at="start", finished_at="end",
                                 trial_dir="dir", exception_type="kind", error="err",
                                 backend=backend)
        nf = t if backend == "pandas" else t.to_pandas()
        assert str(nf["started_at"].dtype).startswith("datetime64") and \
            "UTC" in str(nf["started_at"].dtype)
        assert nf["started_at"][0] == pd.Timestamp("2026-01-11T19:28:25.796872Z")
        assert nf["trial_dir"].tolist()[:2] == ["jobs/a", "jobs/b"]
        assert nf["exception_type"].tolist()[1:] == ["AgentTimeoutError", "error"]
        assert pd.isna(nf["exception_type"][0])
        assert nf["reward_valid"].tolist() == [True, False, False]
        # without latency_ms, total_ms is finished - started
        assert nf["total_ms"][0] == pytest.approx((7 * 60 + 13.203128) * 1000)
        assert nf["total_ms"][1] == pytest.approx(-(54 * 60 + 25) * 1000)  # 18:49:02 UTC
    with pytest.raises(TrialSourceError, match=r"timestamp column 'start', row 0: 'yesterday' "
                                               r"\(str\); expected a datetime or ISO 8601"):
        mk.trials_from_frame(pd.DataFrame({"t": ["a"], "r": [1], "start": ["yesterday"]}),
                             task="t", reward="r", started_at="start")
    with pytest.raises(TrialSourceError, match=r"row 0: 1700000000 \(int\); expected a "
                                               "datetime"):
        mk.trials_from_frame(pd.DataFrame({"t": ["a"], "r": [1], "start": [1700000000]}),
                             task="t", reward="r", started_at="start")


def test_trials_from_frame_warns_on_latency_in_nanoseconds() -> None:
    df = pd.DataFrame({"t": ["a", "b"], "r": [1, 0], "Duration": [433841680000, 335128880000]})
    with pytest.warns(MetrickitWarning, match=r"latency_ms='Duration': the median trial takes "
                      r"12\.2 years .*more than 30 days; is 'Duration' in nanoseconds\? Then "
                      r"pass it divided by 1,000,000 \(median 6\.41 minutes\)"):
        mk.trials_from_frame(df, task="t", reward="r", latency_ms="Duration")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mk.trials_from_frame(df.assign(ms=df["Duration"] / 1e6), task="t", reward="r",
                             latency_ms="ms")


@pytest.mark.skipif(not OTEL.is_file(), reason=f"real data not here ({OTEL})")
def test_otel_bench_results_through_trials_from_frame() -> None:
    df = pd.read_json(OTEL)
    with pytest.warns(MetrickitWarning, match="'Duration' in nanoseconds"):
        mk.trials_from_frame(df, task="TaskName", reward="Reward", model="ModelName",
                             latency_ms="Duration")
    t = mk.trials_from_frame(df, task="TaskName", reward="Reward", model="ModelName",
                             started_at="StartedAt", finished_at="FinishedAt",
                             trial_dir="TrialDir", error="Error")
    assert t["trial_dir"].notna().all() and t["started_at"].notna().all()
    # StartedAt/FinishedAt give the duration Duration holds in nanoseconds
    assert np.allclose(t["total_ms"], df["Duration"] / 1e6, rtol=1e-3, atol=50)


@pytest.mark.skipif(not OTEL.is_file(), reason=f"real data not here ({OTEL})")
def test_otel_bench_results_summarize_is_a_clear_refusal(capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    assert cli.main(["summarize", str(OTEL)]) == 1
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first == f"metrickit summarize: error: {OTEL}: not a source metrickit reads; it is not"
    assert "Traceback" not in err and "mk.trials_from_frame(df, task=" in err
    with pytest.raises(TrialSourceError, match="not a readable Inspect AI log"):
        mk.read_inspect_log(OTEL)  # given straight to the Inspect reader: named, no traceback


def test_trials_from_frame_fuzz_every_argument() -> None:
    """Every column argument given a column of every nasty value (object dtype), pandas and
    polars output: a trial table or a TrialSourceError naming the column."""
    args = ["task", "candidate", "agent", "model", "attempt", "source", "run", "agent_version",
            "dataset", "dataset_version", "group", "agent_kwargs", "latency_ms", "cost_usd",
            "input_tokens", "output_tokens", "error", "exception_type", "started_at",
            "finished_at", "trial_dir", "reward"]
    values = [*NASTY, float("nan"), float("inf"), b"x", datetime(2020, 1, 1), object()]
    refused = 0
    for arg in args:
        for value in values:
            df = pd.DataFrame({"x": pd.Series([value, value], dtype=object), "t": ["a", "b"],
                               "r": [1.0, 0.0]})
            kw: dict[str, Any] = {"task": "t", "reward": "r", arg: "x"}
            for backend in ("pandas", "polars"):
                error = _only_documented(
                    lambda kw=kw, df=df, backend=backend: mk.trials_from_frame(
                        df, backend=backend, **kw))
                refused += error is not None
                assert error is None or "cannot be read (" not in str(error), error
    assert refused > 200


# -- Inspect AI --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def inspect_logs(inspect_fixture_logs: Path) -> dict[str, Path]:
    folder = inspect_fixture_logs  # read-only, shared by the session
    return {name: next((folder / name).glob("*")) for name in ("eval", "json")}


@pytest.mark.slow
def test_inspect_truncated_eval_and_a_json_that_is_no_log(inspect_logs: dict[str, Path],
                                                          tmp_path: Path) -> None:
    whole = inspect_logs["eval"].read_bytes()
    cut = tmp_path / "cut.eval"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(TrialSourceError, match=rf"^{cut}: not a readable Inspect AI log: "
                                               r"Inspect's own reader failed on the log's "
                                               r"header .*\(ValueError: .*\); expected a \.eval"):
        mk.read_inspect_log(cut)
    other = tmp_path / "results.json"
    other.write_text(json.dumps([{"TaskName": "a", "Reward": 1}]))
    with pytest.raises(TrialSourceError, match=rf"^{other}: not a readable Inspect AI log"):
        mk.read_inspect_log(other)


@pytest.mark.slow
def test_inspect_scorer_names_that_collide_are_refused(inspect_logs: dict[str, Path],
                                                       tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log
    from inspect_ai.scorer import Score

    log = read_eval_log(str(inspect_logs["eval"]))
    assert log.samples
    for sample in log.samples:
        if sample.scores and "graded" in sample.scores:
            sample.scores["graded.correct"] = Score(value="I")
    out = tmp_path / inspect_logs["eval"].name
    write_eval_log(log, str(out))
    with pytest.raises(TrialSourceError, match=r"sample '\w+' epoch \d: score 'graded' key "
                                               r"'correct' and score 'graded.correct' both give "
                                               r"the reward column 'graded.correct'"):
        mk.read_inspect_log(out)


@pytest.mark.slow
def test_inspect_fuzz_truncations(inspect_logs: dict[str, Path], tmp_path: Path) -> None:
    """Both log formats cut at 60 places: a table (a .json log cut inside its samples can
    still hold a readable header) or a TrialSourceError naming the file."""
    for log in inspect_logs.values():
        whole = log.read_bytes()
        cut = tmp_path / f"cut{log.suffix}"
        for at in np.linspace(0, len(whole) - 1, 60).astype(int):
            cut.write_bytes(whole[:at])
            error = _only_documented(lambda cut=cut: mk.read_inspect_log(cut))
            assert error is None or str(cut) in str(error)


# -- the command line --------------------------------------------------------------------------


def _explode(args: Any) -> int:
    raise KeyError("the unexpected")


def test_cli_unexpected_error_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    monkeypatch.setitem(cli._COMMANDS, "summarize", _explode)
    monkeypatch.delenv("METRICKIT_DEBUG", raising=False)
    assert cli.main(["summarize", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("metrickit summarize: error: summarize failed unexpectedly with "
                          "KeyError: 'the unexpected' (")
    assert "METRICKIT_DEBUG=1 shows the traceback" in err
    monkeypatch.setenv("METRICKIT_DEBUG", "1")
    assert cli.main(["summarize", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "_explode" in err
    monkeypatch.setitem(cli._COMMANDS, "gate", _explode)
    assert cli.main(["gate", "a", "b"]) == cli.GATE_BAD_INPUT  # not 1: a regression


def test_cli_summarize_of_a_broken_terminal_bench_run(tb_run: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    _set_trial(tb_run, "trial_started_at", "garbage")
    assert cli.main(["summarize", str(tb_run)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field 'trial_started_at' is 'garbage'" in err
