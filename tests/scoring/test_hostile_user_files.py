"""Hostile and odd user files (issue #25, round 3): case tables, scorer files read for their
REWARD_SPEC, and what ``check-scorer`` tells about the cases it did not check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import metrickit as mk
from metrickit import cli
from metrickit.errors import ScorerError
from metrickit.scoring.contract import read_case_lines, read_reward_spec
from metrickit.scoring.scorers import read_cases


def _score(input, output, expected=None):  # type: ignore[no-untyped-def]
    ok = output == expected
    return float(ok), {"feedback": "right" if ok else f"expected {expected!r}, got {output!r}"}


# -- case tables -------------------------------------------------------------------------------


def test_line_separators_inside_json_strings_do_not_split_a_case(tmp_path: Path) -> None:
    rows = [{"q": "one\u2028two", "output": "a\u0085b", "expected": "a\u0085b"},
            {"q": "form\x0cfeed\x1d", "output": "x\u2029", "expected": "y"}]
    path = tmp_path / "cases.jsonl"
    # ensure_ascii=False writes U+2028/U+0085 as they are, as most JSON writers do
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    assert read_cases(path)[0] == rows
    assert mk.check_scorer(_score, path).ok
    scored = mk.score_cases(_score, path)
    assert scored["score"].tolist() == [1.0, 0.0]
    assert mk.judge_repeatability(_score, path, repeats=2).n_cases == 2


def test_crlf_and_a_bom_are_read(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"output": "a"}\r\n\r\n{"output": "b"}\r\n')
    assert read_case_lines(path) == [{"output": "a"}, {"output": "b"}]


def test_a_latin_1_case_file_is_refused_naming_line_and_bytes(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b'{"q": "ok", "output": "a"}\n{"q": "caf\xe9", "output": "b"}\n')
    message = (rf"^{path}:2: not UTF-8: bytes b'\\xe9' at byte 10 of the line \(in "
               r"b'.*caf\\xe9.*'\); a case table is UTF-8 JSON lines: re-save the file as UTF-8")
    with pytest.raises(ScorerError, match=message):
        mk.check_scorer(_score, path)
    with pytest.raises(ScorerError, match=message):
        mk.score_cases(_score, path)


@pytest.mark.parametrize(("line", "message"), [
    (b'{"output": 1', r":1: not valid JSON \(Expecting ',' delimiter"),
    (b'[1, 2]', r":1: a case is \[1, 2\] \(list\); expected a JSON object"),
    (b'{"output": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", r":1: cannot be read"),
    (b'{"output": ' + b"9" * 5000 + b"}", r":1: cannot be read \(ValueError"),
])
def test_malformed_case_lines(tmp_path: Path, line: bytes, message: str) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(line + b"\n")
    with pytest.raises(ScorerError, match=str(path) + message):
        read_cases(path)


def test_case_table_fuzz_truncations(tmp_path: Path) -> None:
    """A small table cut at every byte: rows or a ScorerError naming file and line."""
    whole = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [
        {"case_id": 1, "q": "héllo\u2028", "output": "a", "expected": "a"},
        {"case_id": 2, "q": "日本", "output": "b", "expected": "c"}]).encode()
    path = tmp_path / "cases.jsonl"
    for cut in range(len(whole)):
        path.write_bytes(whole[:cut])
        try:
            read_cases(path)
        except ScorerError as exc:
            assert str(exc).startswith(f"{path}:")


# -- REWARD_SPEC read from the source ----------------------------------------------------------


SPEC = 'REWARD_SPEC = {"accuracy": {"weight": 1.0}}\n'
SCORE = 'def score(input, output, expected=None):\n    return 1.0, {"feedback": "ok"}\n'


def test_a_scorer_file_with_a_bom_or_a_coding_declaration(tmp_path: Path) -> None:
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + (SPEC + SCORE).encode())
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# coding: latin-1\n# caf\xe9\n" + (SPEC + SCORE).encode())
    for path in (bom, latin):
        assert read_reward_spec(path) == {"accuracy": {"weight": 1.0}}
        assert mk.load_scorer(path)[1] == {"accuracy": {"weight": 1.0}}  # as when it runs
    broken = tmp_path / "broken.py"
    broken.write_bytes(b"# coding: klingon\n" + SPEC.encode())
    with pytest.raises(ScorerError, match=rf"^{broken}:"):
        read_reward_spec(broken)


@pytest.mark.parametrize(("source", "line", "why"), [
    ("REWARD_SPEC = {}\nREWARD_SPEC |= {'accuracy': 1.0}\n", 2, "is changed in place"),
    ("import os\nif os.environ.get('X'):\n    REWARD_SPEC = {'accuracy': 1.0}\n", 3,
     "is assigned inside a block"),
    ("try:\n    REWARD_SPEC = {'accuracy': 1.0}\nexcept Exception:\n    pass\n", 2,
     "is assigned inside a block"),
    ("REWARD_SPEC = {}\nREWARD_SPEC['accuracy'] = 1.0\n", 2, "is changed in place"),
    ("REWARD_SPEC = {}\nREWARD_SPEC.update(accuracy=1.0)\n", 2, r"is changed in place \(\.update"),
    ("def setup():\n    global REWARD_SPEC\n    REWARD_SPEC = {}\n", 3,
     "is assigned inside a block"),
    ("from weights import REWARD_SPEC\n", 1, "is imported from another module"),
    ("REWARD_SPEC, OTHER = {}, 1\n", 1, "is unpacked from a tuple"),
    ("del REWARD_SPEC\n", 1, "is deleted"),
])
def test_a_spec_that_cannot_be_read_statically_is_refused(tmp_path: Path, source: str,
                                                          line: int, why: str) -> None:
    path = tmp_path / "metric.py"
    path.write_text(source + SCORE)
    with pytest.raises(ScorerError, match=rf"^{path}:{line}: REWARD_SPEC {why}.*cannot be read "
                                          "without running the file"):
        read_reward_spec(path)


def test_local_names_called_reward_spec_are_not_the_spec(tmp_path: Path) -> None:
    path = tmp_path / "metric.py"
    path.write_text("def f():\n    REWARD_SPEC = 5\n    return REWARD_SPEC\n"
                    "class A:\n    REWARD_SPEC = 1\n" + SPEC + SPEC.replace("1.0", "2.0"))
    assert read_reward_spec(path) == {"accuracy": {"weight": 2.0}}  # the last one, as run


def test_report_spec_refusal_reaches_the_cli_as_one_message(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "metric.py"
    path.write_text("REWARD_SPEC = {}\nREWARD_SPEC |= {'accuracy': 1.0}\n" + SCORE)
    with pytest.raises(ScorerError, match="changed in place"):
        cli._reward_spec(path)


# -- check-scorer: what was checked ------------------------------------------------------------


def _tickets(tmp_path: Path, n: int = 1200) -> Path:
    path = tmp_path / "tickets.jsonl"
    path.write_text("".join(json.dumps({"case_id": i, "message": f"ticket {i}",
                                        "output": None if i % 5 == 1 else "billing",
                                        "expected": "billing"}) + "\n" for i in range(n)))
    return path


NONE_SCORER = '''
def score(input, output, expected=None):
    if output is None:
        return None
    if input["message"].endswith("7"):
        return 1.0
    return float(output == expected), {"feedback": "expected billing"}
'''


def test_check_scorer_says_how_many_cases_were_checked(tmp_path: Path) -> None:
    tickets = _tickets(tmp_path)

    def score(input, output, expected=None):  # type: ignore[no-untyped-def]
        return None if output is None else (1.0, {"feedback": "fine"})

    report = mk.check_scorer(score, tickets)
    assert report.ok and report.n_cases == 1200 and report.unchecked == 1197
    assert ("contract OK: 3 of 3 cases valid (3 of 1,200 cases checked, spread over the table; "
            "the other 1,197 were not: n=None or --all checks every case)") in str(report)
    every = mk.check_scorer(score, tickets, n=None)
    assert not every.ok and len(every.entries) == 1200 and len(every.failed) == 240
    assert every.unchecked == 0 and "(every case of the table checked: 1,200)" in str(every)
    (reason, cases), = every.failure_groups()
    assert len(cases) == 240 and "returned None" in reason


def test_cli_check_scorer_all_prints_only_the_failures_grouped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tickets = _tickets(tmp_path, 300)
    scorer = tmp_path / "metric.py"
    scorer.write_text(NONE_SCORER)
    assert cli.main(["check-scorer", str(scorer), "--cases", str(tickets)]) in (0, 1)
    sampled = capsys.readouterr().out
    assert "of 300 cases checked, spread over the table; the other" in sampled
    assert cli.main(["check-scorer", str(scorer), "--cases", str(tickets), "--all"]) == 1
    out = capsys.readouterr().out
    assert "contract BROKEN: 90 of 300 cases break it (every case of the table " \
        "checked: 300)" in out
    assert "✗ 60 case(s): returned None (NoneType); expected a pair" in out
    assert "✗ 30 case(s): returned a bare number 1.0" in out
    assert "e.g. case 1 [case_id=1], case 6 [case_id=6], case 11 [case_id=11], ... (57 more)" \
        in out
    assert len(out.splitlines()) < 15  # not one line per case
    with pytest.raises(SystemExit):  # --n and --all together make no sense
        cli.main(["check-scorer", str(scorer), "--cases", str(tickets), "--all", "--n", "5"])
