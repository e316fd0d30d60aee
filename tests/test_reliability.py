"""Reliability: the nasty corpus, faulty user code, a soak run, and what runs user code.

The fuzz tests live in ``tests/test_fuzz_*.py``; RELIABILITY.md summarises both.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from harbor_reference import harbor_aggregate
from reward_oracle import check_frame, expect

import metrickit as mk
from metrickit.cli import main as cli_main
from metrickit.errors import (
    HarborJobError,
    MetricScriptError,
    MetricScriptExit,
    MetricScriptOutputError,
    MetricScriptTimeout,
    RewardFileError,
)

ROOT = Path(__file__).resolve().parent.parent
NASTY = Path(__file__).resolve().parent / "data" / "nasty"
MANIFEST = json.loads((NASTY / "expected.json").read_text(encoding="utf-8"))
JOB = ROOT / "data" / "harbor_jobs" / "2025-06-02__10-00-00"
# A folder name no shell would survive unquoted.
AWKWARD = "dir with spaces, 'single' \"double\" $HOME & ;|"


# ---------------------------------------------------------------------------
# The nasty corpus (tests/data/nasty/README.md)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MANIFEST["rewards"]))
def test_nasty_reward_file(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = NASTY / "rewards" / name
    case = MANIFEST["rewards"][name]
    data = path.read_bytes()
    oracle = expect(data)
    # The manifest and the independent oracle agree on the expected outcome.
    if "rows" in case:
        assert oracle.first_bad is None and oracle.clash() is None
        assert len(oracle.rows) == case["rows"]
    else:
        assert (oracle.first_bad or oracle.clash_line()) == case["error_line"]

    readers: dict[str, Any] = {
        "pandas": lambda: mk.read_rewards(path),
        "polars": lambda: mk.read_rewards(path, backend="polars"),
        "scan": lambda: mk.scan_rewards(path, chunk_bytes=64).collect(),
    }
    for reader, read in readers.items():
        if "rows" in case:
            check_frame(read(), oracle)
        else:
            with pytest.raises(RewardFileError) as info:
                read()
            message = str(info.value)
            assert message.startswith(f"{path}:{case['error_line']}: "), (reader, message)
            assert case["match"] in message, (reader, message)

    if case.get("aggregates"):
        # Valid Harbor input that no frame can hold (a key named like a metadata column):
        # the scan's schema refuses it too, and every aggregate path gives Harbor's answer.
        with pytest.raises(RewardFileError, match=case["match"]):
            mk.scan_rewards(path).collect_schema()
        rows = [json.loads(line) for line in data.splitlines() if line.strip()]
        for metric in ("mean", "sum", "min", "max"):
            want = harbor_aggregate(rows, metric)
            assert mk.aggregate(path, metric) == want
            assert mk.aggregate(mk.scan_rewards(path, chunk_bytes=64), metric) == want
            assert mk.aggregate(rows, metric) == want

    out = tmp_path / "metrics.json"
    code = cli_main(["aggregate", "-i", str(path), "-o", str(out)])
    err = capsys.readouterr().err
    if case.get("aggregates"):
        assert code == 0, err
        assert json.loads(out.read_text()) == harbor_aggregate(rows)
    elif "rows" in case:
        assert code == 0, err
        assert json.loads(out.read_text()) == mk.aggregate(mk.read_rewards(path))
    else:
        assert code == 1 and not out.exists()
        assert err.startswith(f"metrickit aggregate: error: {path}:{case['error_line']}: ")


def _job_with(tmp_path: Path, result: bytes) -> tuple[Path, Path]:
    job = tmp_path / AWKWARD / JOB.name
    shutil.copytree(JOB, job)
    trial = sorted(p for p in job.iterdir() if p.is_dir())[0]
    (trial / "result.json").write_bytes(result)
    return job, trial / "result.json"


@pytest.mark.parametrize("name", sorted(MANIFEST["harbor"]))
def test_nasty_harbor_trial(name: str, tmp_path: Path) -> None:
    match = MANIFEST["harbor"][name]["match"]
    job, result = _job_with(tmp_path, (NASTY / "harbor" / name).read_bytes())
    for backend in ("pandas", "polars"):
        if match is None:
            assert len(mk.read_harbor_job(job, backend=backend)) == 24  # type: ignore[arg-type]
            continue
        with pytest.raises(HarborJobError) as info:
            mk.read_harbor_job(job, backend=backend)  # type: ignore[arg-type]
        message = str(info.value)
        assert message.startswith(f"{result}"), message
        assert match in message, message
        # errors="report": the bad trial keeps its row, the other 23 are read.
        frame, problems = mk.read_harbor_job(job, backend=backend, errors="report")  # type: ignore[arg-type]
        assert len(frame) == 24
        if problems:  # a bad file; a bad reward value raises even in report mode
            assert [p.source for p in problems] == [str(result)]


# ---------------------------------------------------------------------------
# Faulty scorers: functions (threads, in this process)
# ---------------------------------------------------------------------------

RELEASE = threading.Event()  # set at the end of a test to free abandoned "hang" threads


class _BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr is broken")


def faulty(input: dict[str, Any], output: Any, expected: Any = None) -> Any:
    kind = input["kind"]
    if kind == "ok":
        return float(output), {"feedback": f"case {input['i']}"}
    if kind == "raise":
        raise ValueError("boom")
    if kind == "hang":
        RELEASE.wait(300)
        return 1.0, {"feedback": "late"}
    if kind == "exit":
        sys.exit(3)
    if kind == "print":
        sys.stdout.write("x" * 2_000_000)
        return 1.0, {"feedback": "printed"}
    if kind == "huge":
        return list(range(1_000_000))
    if kind == "selfref":
        side: dict[str, Any] = {"feedback": "me"}
        side["scores"] = side
        return 1.0, side
    if kind == "mutate":
        input.clear()
        expected["label"] = "changed"
        return 1.0, {"feedback": "mutated"}
    if kind == "recurse":
        return faulty(input, output, expected)
    if kind == "bigint":
        return 10**400, {"feedback": "big"}
    if kind == "badrepr":
        return _BadRepr()
    if kind == "baseexc":
        raise GeneratorExit("a BaseException")
    raise AssertionError(kind)


FAULTS = {
    "raise": "raised ValueError: boom",
    "hang": "timed out: no result within 1 s",
    "exit": "called sys.exit(3)",
    "huge": "returned a list of 1000000 item(s)",
    "selfref": "named score 'feedback' is 'me' (str)",
    "recurse": "raised RecursionError",
    "bigint": "the score is 1000000000",
    "badrepr": "<unrepresentable _BadRepr",
    "baseexc": "raised GeneratorExit",
}
HARMLESS = ("print", "mutate")  # valid returns: scored, not errors


def _cases() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    shared = {"label": "a"}  # one expected object shared by every case, as from a fixture
    kinds = ["ok", *FAULTS, "ok", *HARMLESS, "ok"]
    cases = [{"case_id": i, "input": {"kind": k, "i": i}, "output": i / 100, "expected": shared}
             for i, k in enumerate(kinds)]
    return cases, shared


def test_faulty_function_scorers_are_reported_per_case(capsys: pytest.CaptureFixture[str]) -> None:
    cases, shared = _cases()
    RELEASE.clear()
    try:
        scored = mk.score_cases(faulty, cases, timeout=1, workers=4, progress=False)
    finally:
        RELEASE.set()
    capsys.readouterr()  # the "print" case's 2 MB
    assert len(scored) == len(cases)
    assert scored["case_id"].tolist() == [c["case_id"] for c in cases]
    for case, (_, row) in zip(cases, scored.iterrows(), strict=True):
        kind = case["input"]["kind"]
        if kind in FAULTS:
            assert FAULTS[kind] in row["error"], (kind, row["error"])
            assert row["score"] == 0.0
        elif kind == "ok":  # the other cases' results are intact
            assert pd.isna(row["error"])
            assert row["score"] == case["output"]
            assert row["feedback"] == f"case {case['case_id']}"
        else:
            assert row["score"] == 1.0, (kind, row["error"])
    assert mk.score_summary(scored)["failed"] == len(FAULTS)
    assert mk.score_summary(scored)["timed_out"] == 1
    # A scorer that mutates its input changes neither the caller's table nor other cases.
    assert shared == {"label": "a"}
    assert all(c["input"] for c in cases)


def test_faulty_function_scorer_in_check_scorer() -> None:
    cases, _ = _cases()
    RELEASE.clear()
    try:
        report = mk.check_scorer(faulty, cases, n=len(cases), timeout=1)
    finally:
        RELEASE.set()
    assert len(report.entries) == len(cases)
    by_kind = {c["input"]["kind"]: e for c, e in zip(cases, report.entries, strict=True)}
    for kind, reason in FAULTS.items():
        assert any(reason in p for p in by_kind[kind].problems), (kind, by_kind[kind].problems)
    assert by_kind["hang"].timed_out
    assert by_kind["ok"].ok and by_kind["mutate"].ok
    str(report), report._repr_html_()  # the report renders whatever the scorer returned


# ---------------------------------------------------------------------------
# Faulty scorers: files (check_scorer runs them in a separate process)
# ---------------------------------------------------------------------------

SCORER_FILE = '''
import os, signal, sys, time

def score(input, output, expected=None):
    kind = input["kind"]
    if kind == "ok":
        return float(output), {"feedback": "fine"}
    if kind == "raise":
        raise ValueError("boom")
    if kind == "hang":
        time.sleep(60)
    if kind == "exit":
        sys.exit(4)
    if kind == "osexit":
        os._exit(7)
    if kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "print":
        print("x" * 3_000_000, flush=True)
        sys.stderr.write("y" * 3_000_000 + "\\n")
        return 1.0, {"feedback": "printed"}
    if kind == "crash":
        sys.stderr.write("z" * 1_000_000 + "\\n")
        os.abort()
    if kind == "huge":
        return 1.0, {"feedback": "f" * 2_000_000}
    if kind == "selfref":
        side = {"feedback": "me"}
        side["me"] = side
        return 1.0, side
    if kind == "recurse":
        def down(n):
            return down(n + 1)
        return down(0)
    if kind == "bigint":
        return 10**400, {"feedback": "big"}
'''


@pytest.mark.slow
def test_faulty_scorer_file_runs_in_its_own_process(tmp_path: Path) -> None:
    folder = tmp_path / AWKWARD
    folder.mkdir()
    path = folder / "my 'scorer' \"file\".py"
    path.write_text(SCORER_FILE)
    expected = {
        "ok": None,
        "raise": "raised ValueError: boom (at my 'scorer' \"file\".py:",
        "hang": "timed out: no result within 1.5 s (the scorer process was stopped)",
        "exit": "called sys.exit(4)",
        "osexit": "the scorer process exited with code 7",
        "kill": "the scorer process was killed by SIGKILL",
        "print": None,
        "crash": "the scorer process was killed by SIGABRT",
        "huge": None,
        "selfref": None,
        "recurse": "raised RecursionError",
        "bigint": "the score is 1000000000",
    }
    kinds = [*expected, "ok"]
    cases = [{"input": {"kind": k}, "output": 0.5} for k in kinds]
    report = mk.check_scorer(path, cases, n=len(cases), timeout=1.5)
    assert report.problems == () and len(report.entries) == len(cases)
    for kind, entry in zip(kinds, report.entries, strict=True):
        reason = expected[kind]
        if reason is None:
            assert entry.ok, (kind, entry.problems)
        else:
            assert len(entry.problems) == 1 and reason in entry.problems[0], (kind, entry.problems)
            # megabytes printed by this or an earlier case do not flood the reason
            assert len(entry.problems[0]) < 2000, (kind, len(entry.problems[0]))
    assert report.entries[-1].ok and report.entries[-1].score == 0.5  # the process was replaced


# ---------------------------------------------------------------------------
# The soak run
# ---------------------------------------------------------------------------


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # pragma: no cover (not Linux)


@pytest.mark.slow
def test_soak_score_cases_10000(record_property: Any) -> None:
    """10,000 cases: 5 % raise, 1 % hang past a 1 s timeout. Every case is accounted for,
    and memory does not grow with the number of cases.

    The hanging calls cannot be stopped (they are threads); they wait on an event that is
    set once ``score_cases`` has returned, so the test also shows that each abandoned call
    is still there until then, and that releasing them ends every one.

    Memory: RSS is sampled from inside the scorer at cases 2,000, 6,000 and 9,900. The
    second span (3,900 cases) may not grow by more than 24 MB. What a run keeps per case is
    one result dict (a few hundred bytes: under 2 MB for the span); a leak per call, such as
    a thread's stack (each call runs in a new thread that touches tens of kB of stack) or
    the deep copy of the case, would add at least 40 MB over that span.
    """
    n = 10_000
    samples: dict[int, int] = {}
    release = threading.Event()

    def score(input: dict[str, Any], output: Any, expected: Any = None) -> Any:
        i = input["i"]
        if i in (2_000, 6_000, 9_900):
            samples[i] = _rss_kb()
        if i % 20 == 7:
            raise RuntimeError(f"failure {i}")
        if i % 100 == 3:
            release.wait(600)
            return 0.0, {"feedback": "too late"}
        return i / n, {"feedback": "ok", "scores": {"half": i / (2 * n)}}

    cases = [{"case_id": i, "input": {"i": i, "pad": "p" * 200}, "output": i} for i in range(n)]
    # thread objects, not idents: an ident is reused once its thread ends, so a thread of an
    # earlier test that ends during this one could hide a scorer thread
    before = set(threading.enumerate())
    try:
        scored = mk.score_cases(score, cases, timeout=1.0, workers=20, progress=False)
        abandoned = [t for t in threading.enumerate()
                     if t not in before and t.name == "metrickit-scorer" and t.is_alive()]
    finally:
        release.set()
    for thread in abandoned:
        thread.join(10)
    assert not [t for t in abandoned if t.is_alive()]

    assert len(scored) == n and sorted(scored["case_id"]) == list(range(n))
    errors = scored["error"]
    raised = errors.str.startswith("raised RuntimeError: failure", na=False)
    timed_out = errors.str.startswith("timed out", na=False)
    ok = errors.isna()
    assert raised.sum() == 500 and timed_out.sum() == 100 and ok.sum() == 9_400
    assert (scored.loc[raised, "case_id"] % 20 == 7).all()
    assert (scored.loc[timed_out, "case_id"] % 100 == 3).all()
    assert (scored.loc[ok, "score"] == scored.loc[ok, "case_id"] / n).all()
    assert (scored.loc[ok, "score_half"] == scored.loc[ok, "case_id"] / (2 * n)).all()
    assert (scored.loc[~ok, "score"] == 0.0).all()
    assert len(abandoned) == 100  # each hung call was abandoned, none lost or double-counted
    summary = mk.score_summary(scored)
    assert summary == {"cases": n, "mean_score": pytest.approx(scored["score"].mean()),
                       "failed": 600, "timed_out": 100}

    growth_kb = samples[9_900] - samples[6_000]
    record_property("rss_kb", samples)
    print(f"soak RSS kB at cases 2000/6000/9900: {samples}; growth over the last span "
          f"{growth_kb} kB")
    assert growth_kb < 24 * 1024, samples


# ---------------------------------------------------------------------------
# Metric scripts
# ---------------------------------------------------------------------------

SCRIPT_HEAD = "import json, os, signal, sys, time\nout = sys.argv[sys.argv.index('-o') + 1]\n"
SCRIPTS: dict[str, tuple[str, type[MetricScriptError] | None, str]] = {
    "ok": ("json.dump({'mean': 0.5}, open(out, 'w'))", None, ""),
    "raise": ("raise ValueError('boom')", MetricScriptExit, "ValueError: boom"),
    "hang": ("time.sleep(60)", MetricScriptTimeout, "ran past its 1.5 s timeout"),
    "exit": ("sys.exit(3)", MetricScriptExit, "exited with status 3"),
    "osexit": ("os._exit(5)", MetricScriptExit, "exited with status 5"),
    "kill": ("os.kill(os.getpid(), signal.SIGKILL)", MetricScriptExit, "killed by signal 9"),
    "recurse": ("def f(n):\n    return f(n + 1)\nf(0)", MetricScriptExit, "RecursionError"),
    "print": ("sys.stdout.write('x' * 5_000_000)\nsys.stderr.write('y' * 5_000_000)\n"
              "json.dump({'mean': 1}, open(out, 'w'))", None, ""),
    "huge": ("json.dump({f'k{i}': i for i in range(100_000)}, open(out, 'w'))", None, ""),
    "nothing": ("pass", MetricScriptOutputError, "wrote no output file"),
    "deep": ("open(out, 'w').write('[' * 100_000)", MetricScriptOutputError,
             "nested too deeply"),
    "digits": ("open(out, 'w').write('{\"m\": ' + '1' * 5000 + '}')", MetricScriptOutputError,
               "cannot be read"),
    "nan": ("open(out, 'w').write('{\"m\": NaN}')", MetricScriptOutputError,
            "expected a finite number"),
    "not_utf8": ("open(out, 'wb').write(b'{\"\\xff\": 1}')", MetricScriptOutputError,
                 "not UTF-8"),
    "surrogate": ("open(out, 'w').write('{\"\\\\ud800\": 1}')", MetricScriptOutputError,
                  "lone UTF-16 surrogate"),
    "list": ("json.dump([1, 2], open(out, 'w'))", MetricScriptOutputError, "expected a JSON"),
    "mutate": ("open(sys.argv[sys.argv.index('-i') + 1], 'w').write('garbage')\n"
               "json.dump({'mean': 2}, open(out, 'w'))", None, ""),
}


@pytest.mark.parametrize("kind", sorted(SCRIPTS))
def test_faulty_metric_script(kind: str, tmp_path: Path) -> None:
    body, error, match = SCRIPTS[kind]
    folder = tmp_path / AWKWARD
    folder.mkdir()
    script = folder / f"metric '{kind}' \"x\".py"
    script.write_text(SCRIPT_HEAD + body + "\n")
    rows = [{"reward": 1}, None, {"reward": 0}]
    if error is None:
        frame = mk.read_rewards(rows)
        before = frame.copy()
        result = mk.run_metric_script(script, frame, timeout=1.5)
        assert result == {"ok": {"mean": 0.5}, "print": {"mean": 1}, "mutate": {"mean": 2},
                          "huge": {f"k{i}": i for i in range(100_000)}}[kind]
        pd.testing.assert_frame_equal(frame, before)  # the script only saw a copy
        return
    with pytest.raises(error) as info:
        mk.run_metric_script(script, rows, timeout=1.5)
    message = str(info.value)
    assert str(script) in message and match in message, message
    assert len(message) < 5_000  # the stderr tail is a tail


# ---------------------------------------------------------------------------
# Safety: no eval, no shell; REWARD_SPEC read without running the file
# ---------------------------------------------------------------------------


def _unsafe_calls(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else "")
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(
            func.value, ast.Name) else ""
        if name in ("eval", "exec", "compile") and isinstance(func, ast.Name):
            found.append(f"{name}() at line {node.lineno}")
        if (owner == "os" and name in ("system", "popen")) or name in (
                "getoutput", "getstatusoutput"):
            found.append(f"{owner}.{name}() at line {node.lineno}")
        for kw in node.keywords:
            if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant)
                                          and kw.value.value is False):
                found.append(f"shell= at line {node.lineno}")
    return found


def test_no_eval_exec_or_shell_in_the_package() -> None:
    offenders = {}
    for path in sorted((ROOT / "metrickit").glob("*.py")):
        calls = _unsafe_calls(path.read_text(encoding="utf-8"))
        if calls:
            offenders[path.name] = calls
    assert offenders == {}
    # The checker itself finds what it is looking for.
    assert len(_unsafe_calls("eval('1')\nexec(s)\nos.system(c)\n"
                             "subprocess.run(c, shell=True)\n")) == 4


def test_reward_spec_is_read_without_running_the_file(tmp_path: Path) -> None:
    folder = tmp_path / AWKWARD
    folder.mkdir()
    marker = tmp_path / "ran"
    path = folder / "scorer 'x'.py"
    path.write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "import os\nos._exit(9)\n"
        "REWARD_SPEC = {'weights': {'accuracy': 1, 'speed': 0, 'cost': 0}, 'accuracy': {},\n"
        "               'speed': {'reference': 1}, 'cost': {'reference': 1}}\n"
        "def score(input, output, expected=None):\n    return 1.0, {'feedback': 'ok'}\n")
    spec = mk.read_reward_spec(path)
    assert spec is not None and spec["weights"]["accuracy"] == 1
    assert not marker.exists()
    mk.RewardSpec.from_dict(spec)
    # A REWARD_SPEC that would need running code is refused, not evaluated.
    path.write_text(f"REWARD_SPEC = open({str(marker)!r}, 'w').write('ran')\n")
    with pytest.raises(mk.errors.ScorerError, match="not a plain literal"):
        mk.read_reward_spec(path)
    assert not marker.exists()


def test_score_cases_with_an_awkward_scorer_path(tmp_path: Path) -> None:
    folder = tmp_path / AWKWARD
    folder.mkdir()
    path = folder / "exact 'match' \"v2\".py"
    path.write_text("def score(input, output, expected=None):\n"
                    "    return float(output == expected), {'feedback': 'compared'}\n")
    scored = mk.score_cases(path, [{"q": 1, "output": "a", "expected": "a"},
                                   {"q": 2, "output": "b", "expected": "a"}], progress=False)
    assert scored["score"].tolist() == [1.0, 0.0]


# ---------------------------------------------------------------------------
# The CLI as a real process
# ---------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "metrickit.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


@pytest.mark.slow
def test_cli_subprocess_on_nasty_files(tmp_path: Path) -> None:
    folder = tmp_path / AWKWARD
    folder.mkdir()
    good = folder / "bom crlf 'x'.jsonl"
    shutil.copy(NASTY / "rewards" / "bom_crlf.jsonl", good)
    out = folder / "metrics 'out'.json"
    done = _cli("aggregate", "-i", str(good), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == {"mean": 0.5}

    bad = folder / "deep.jsonl"
    shutil.copy(NASTY / "rewards" / "deep_nesting.jsonl", bad)
    out.unlink()
    done = _cli("aggregate", "-i", str(bad), "-o", str(out))
    assert done.returncode == 1 and not out.exists()
    assert done.stderr.startswith(f"metrickit aggregate: error: {bad}:2: JSON nested too deeply")
    assert "Traceback" not in done.stderr


def test_cli_subprocess_on_arbitrary_bytes(tmp_path: Path) -> None:
    path = tmp_path / "noise.jsonl"
    path.write_bytes(bytes(range(256)) * 4)
    done = _cli("aggregate", "-i", str(path), "-o", str(tmp_path / "o.json"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert re.match(re.escape(f"metrickit aggregate: error: {path}:") + r"\d+: ", done.stderr)


# ---------------------------------------------------------------------------
# Paths that are not UTF-8
# ---------------------------------------------------------------------------


def _latin1_folder(tmp_path: Path) -> bytes:
    folder = os.fsencode(tmp_path) + b"/caf\xe9"  # Latin-1: legal on Linux, not UTF-8
    try:
        os.mkdir(folder)
    except (OSError, UnicodeError):
        pytest.skip("the file system refuses names that are not UTF-8")
    return folder


def test_reward_path_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _latin1_folder(tmp_path)
    with open(folder + b"/r.jsonl", "wb") as fh:
        fh.write(b'{"a": 1}\n{"a": 0.5, "b": true}\nnull\n')
    path = os.fsdecode(folder + b"/r.jsonl")  # surrogate-escaped, as os.fsdecode gives it
    expected = {"a": 0.5, "b": 0.3333333333333333}
    # pandas keeps the label exactly (was UnicodeEncodeError)
    frame = mk.read_rewards(path)
    assert frame["_source"].tolist() == [path] * 3
    assert mk.aggregate(frame) == expected
    assert mk.aggregate(frame, by="_source") == {path: expected}
    dask = mk.read_rewards(path, backend="dask")
    assert dask.compute()["_source"].tolist() == [path] * 3
    assert mk.aggregate(path) == mk.aggregate(dask) == expected
    # polars cannot hold the label: metrickit's own error, naming the path printably
    shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    with pytest.raises(RewardFileError, match="the path is not UTF-8") as info:
        mk.read_rewards(path, backend="polars")
    assert str(info.value).startswith(f"{shown}: ")
    scan = mk.scan_rewards(path)
    assert mk.aggregate(scan) == expected  # needs no label
    with pytest.raises(RewardFileError, match="the path is not UTF-8"):
        scan.collect()
    out = tmp_path / "metrics.json"
    assert cli_main(["aggregate", "-i", path, "-o", str(out)]) == 0, capsys.readouterr().err
    assert json.loads(out.read_text()) == expected


def test_harbor_job_path_not_utf8(tmp_path: Path) -> None:
    folder = _latin1_folder(tmp_path)
    job = os.fsdecode(folder + b"/" + JOB.name.encode())
    shutil.copytree(JOB, job)
    trials = mk.read_harbor_job(job)
    assert len(trials) == 24 and all(d.startswith(job) for d in trials["trial_dir"])
    frame, problems = mk.read_harbor_job(job, errors="report")
    assert len(frame) == 24 and problems == []
    assert mk.job_metrics(trials) == mk.job_metrics(mk.read_harbor_job(JOB))
    with pytest.raises(HarborJobError, match="path is not UTF-8"):
        mk.read_harbor_job(job, backend="polars")
