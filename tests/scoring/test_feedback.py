"""Feedback an optimiser can use: check_scorer's warnings and feedback_report, on the seed
scorer page's own examples ("Wrong.", "Bad format." against "Expected 'billing', got 'other'.
The message mentions a charge.")."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

import metrickit as mk
from metrickit.scoring.feedback import (
    FeedbackCase,
    feedback_report,
    feedback_warnings,
    is_generic,
    names_value,
)

CASES_DIR = Path(__file__).resolve().parents[2] / "data" / "cases"
USEFUL = "Expected 'billing', got 'other'. The message mentions a charge."
TICKET = {"message": "I was charged twice for my subscription."}
BILLING = {"label": "billing"}


def case(feedback, score=0.0, output="other", expected=BILLING, label="case 0"):
    return FeedbackCase(label, score, feedback, output, expected)


def returning(feedback_for):
    """A scorer scoring exact label matches with feedback_for(output, want)."""
    def score(input, output, expected=None):
        want = expected["label"]
        return float(output == want), {"feedback": feedback_for(output, want)}
    return score


def tickets(outputs, labels):
    return [{"case_id": f"t{i}", "input": TICKET, "output": o, "expected": {"label": w}}
            for i, (o, w) in enumerate(zip(outputs, labels, strict=True))]


# ---------------------------------------------------------------------------
# The heuristics, one by one
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["Wrong.", "Bad format.", "Incorrect", "wrong label",
                                  "The answer is wrong.", "FAIL", "  Invalid output!  "])
def test_the_seed_pages_weak_feedback_is_generic(text):
    assert is_generic(text)
    (warning,) = feedback_warnings([case(text)])
    assert "is generic" in warning
    assert repr(text) in warning  # quotes the feedback
    assert "case 0 (output 'other', expected {'label': 'billing'})" in warning  # and the case


def test_the_seed_pages_useful_feedback_passes_every_check():
    assert not is_generic(USEFUL)
    assert feedback_warnings([case(USEFUL)]) == []
    assert names_value(USEFUL, BILLING) and names_value(USEFUL, "other")


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_empty_feedback_is_warned_once(text):
    (warning,) = feedback_warnings([case(text)])
    assert "the feedback is empty" in warning and "case 0" in warning


def test_an_affirmation_is_accepted_at_full_marks_only():
    assert feedback_warnings([case("Correct.", score=1.0, output="billing")]) == []
    (warning,) = feedback_warnings([case("Correct.", score=0.5, output="billing")])
    assert "'Correct.' is generic" in warning and "(score 0.5)" in warning


def test_the_same_feedback_for_different_scores_is_warned_with_each_case():
    text = "Expected 'billing'."
    warnings = feedback_warnings([case(text, 0.0, label="case 0"),
                                  case(text, 1.0, output="billing", label="case 1")])
    (warning,) = warnings
    assert "is the same for different scores (case 0: 0, case 1: 1)" in warning
    assert repr(text) in warning


def test_the_same_weak_feedback_for_the_same_score_is_only_generic():
    warnings = feedback_warnings([case("Wrong.", label="case 0"),
                                  case("Wrong.", label="case 1")])
    assert len(warnings) == 2 and all("is generic" in w for w in warnings)


def test_feedback_naming_neither_expected_nor_output_is_warned():
    text = "The label does not fit this ticket's topic at all."
    (warning,) = feedback_warnings([case(text)])
    assert "names neither the expected value nor the output" in warning
    assert repr(text) in warning and "expected {'label': 'billing'}" in warning
    # naming either is enough
    assert feedback_warnings([case("You answered 'other'; think about money.")]) == []
    assert feedback_warnings([case("It is a billing question.")]) == []
    # without an expected value, only the output is looked for
    (warning,) = feedback_warnings([case("Not a label we use.", expected=None)])
    assert "names neither the output" in warning


def test_a_failed_call_has_no_feedback_to_judge():
    assert feedback_warnings([case(None)]) == []


def test_names_value_matches_whole_words_of_leaves_not_keys():
    assert not names_value("another one", "other")  # not inside a word
    assert names_value("OTHER is wrong", "other")  # case-insensitive
    assert not names_value("The label is wrong", {"label": "billing"})  # keys do not count
    assert names_value("missing fields: date", {"fields": ["date", "amount"]})
    assert names_value("got 3 items", 3.0) and names_value("score 0.25", 0.25)
    long = "The customer asks why the invoice for March shows a second charge of 40 euros."
    assert names_value("Your summary dropped 'a second charge of 40 euros'.", long)
    assert not names_value("Your summary is too short.", long)


def test_scores_beyond_one_use_the_best_score_as_full_marks():
    # a 0-10 scorer: 10 is full marks, an affirmation there is fine
    warnings = feedback_warnings([case("Perfect.", 10.0, output="billing"),
                                  case("Expected 'billing', got 'other'.", 3.0)])
    assert warnings == []


# ---------------------------------------------------------------------------
# check_scorer
# ---------------------------------------------------------------------------


def test_check_scorer_warns_on_weak_feedback_but_the_contract_holds():
    cases = tickets(["other", "Billing", "billing"], ["billing", "billing", "billing"])
    weak = returning(lambda o, w: "Correct." if o == w else
                     ("Bad format." if o != o.lower() else "Wrong."))
    report = mk.check_scorer(weak, cases)
    assert report.ok and not report.problems
    assert len(report.warnings) == 2
    assert "'Wrong.' is generic" in report.warnings[0]
    assert "case 0 [case_id='t0'] (output 'other'" in report.warnings[0]
    assert "'Bad format.' is generic" in report.warnings[1]
    text = str(report)
    assert "contract OK" in text and "feedback warnings (not failures)" in text
    assert "! case 0 [case_id='t0']" in text
    html = report._repr_html_()
    assert "Feedback warnings" in html and "&#x27;Wrong.&#x27; is generic" in html


def test_check_scorer_gives_no_warning_for_useful_feedback():
    cases = tickets(["other", "Billing", "billing"], ["billing", "billing", "billing"])
    useful = returning(lambda o, w: f"Correct: {w!r}." if o == w else
                       f"Expected {w!r}, got {o!r}. The message mentions a charge.")
    report = mk.check_scorer(useful, cases)
    assert report.ok and report.warnings == ()
    assert "feedback warnings" not in str(report)
    assert "Feedback warnings" not in report._repr_html_()


def test_check_scorer_on_the_example_scorer_files():
    rows = pd.read_json(CASES_DIR / "tickets.jsonl", lines=True)
    labels = rows["expected"].map(lambda e: e["label"])
    wrong = rows[rows["output"] != labels].head(3)
    weak = mk.check_scorer(CASES_DIR / "weak_feedback.py", wrong)
    useful = mk.check_scorer(CASES_DIR / "useful_feedback.py", wrong)
    assert weak.ok and useful.ok
    assert len(weak.warnings) == 3 and all("is generic" in w for w in weak.warnings)
    assert useful.warnings == ()


def test_a_reward_spec_scorer_is_judged_on_its_accuracy_part():
    rows = pd.read_json(CASES_DIR / "tickets.jsonl", lines=True)
    labels = rows["expected"].map(lambda e: e["label"])
    right = rows[rows["output"] == labels].head(3)
    # "Correct." with composites below 1 (speed and cost) is not a warning ...
    assert mk.check_scorer(CASES_DIR / "reward_spec.py", right).warnings == ()
    # ... "Wrong label." on a wrong answer is, and says it is the accuracy part
    wrong = rows[rows["output"] != labels].head(1)
    (warning,) = mk.check_scorer(CASES_DIR / "reward_spec.py", wrong).warnings
    assert "'Wrong label.' is generic" in warning and "(accuracy 0)" in warning


def test_the_contract_failures_are_not_feedback_warnings():
    cases = tickets(["other"], ["billing"])
    report = mk.check_scorer(lambda input, output: (0.0, {"feedback": 3}), cases)
    assert not report.ok and report.warnings == ()


# ---------------------------------------------------------------------------
# feedback_report
# ---------------------------------------------------------------------------


def _scored(scorer, cases, **kw):
    return mk.score_cases(scorer, cases, progress=False, **kw)


def test_feedback_report_on_weak_and_useful_scorers():
    rows = pd.read_json(CASES_DIR / "tickets.jsonl", lines=True).head(300)
    weak_scored = _scored(CASES_DIR / "weak_feedback.py", rows)
    useful_scored = _scored(CASES_DIR / "useful_feedback.py", rows)
    weak = feedback_report(weak_scored, cases=rows)
    useful = feedback_report(useful_scored, cases=rows)
    failing = int((weak_scored["score"] < 1).sum())
    assert failing > 10 and weak.failing == useful.failing == failing
    # the counts are those of the table
    counts = Counter(weak_scored["feedback"])
    assert weak.distinct == len(counts) == 3
    assert dict(zip(weak.top["feedback"], weak.top["count"], strict=True)) == dict(counts)
    assert weak.top["count"].is_monotonic_decreasing
    assert weak.distinct_share == pytest.approx(3 / 300)
    # the headline difference
    assert weak.names_expected_share == 0.0
    assert useful.names_expected_share == 1.0
    assert weak.summary()["generic share"] == pytest.approx(failing / 300)
    assert useful.summary()["generic share"] == 0.0
    assert useful.failing_distinct_share > weak.failing_distinct_share
    lengths = useful_scored["feedback"].str.len()
    assert useful.lengths["median"] == lengths.median()
    assert useful.lengths["max"] == lengths.max()
    assert "failing cases (below 1) whose feedback names the expected value: 0 of" in str(weak)
    assert "<table" in weak._repr_html_()


def test_feedback_report_reads_output_and_expected_kept_as_keys_and_polars():
    cases = tickets(["other", "billing"], ["billing", "billing"])
    scorer = returning(lambda o, w: "ok" if o == w else f"Expected {w!r}.")
    scored = _scored(scorer, cases, keys=["case_id", "output", "expected"], backend="polars")
    assert isinstance(scored, pl.DataFrame)
    report = feedback_report(scored)
    assert report.names_expected_share == 1.0 and report.failing == 1
    assert report.rows["names_output"].tolist() == [False, False]


def test_feedback_report_counts_failed_calls_apart():
    cases = tickets(["other", "billing", "x"], ["billing", "billing", "billing"])

    def scorer(input, output, expected=None):
        if output == "x":
            raise ValueError("boom")
        return float(output == expected["label"]), {"feedback": "Wrong." if output != "billing"
                                                    else "Correct."}
    report = feedback_report(_scored(scorer, cases), cases=cases)
    assert report.n_errors == 1 and report.n_feedback == 2
    assert pd.isna(report.rows["generic"][2])
    assert "(2 with feedback; 1 call failed and gave no feedback to judge)" in str(report)
    assert "median 1 word\n" in str(report)  # "Wrong." and "Correct.": one word each


def test_feedback_report_without_expected_values_says_so():
    scored = _scored(returning(lambda o, w: "Wrong."), tickets(["other"], ["billing"]))
    report = feedback_report(scored)
    assert report.failing == 1 and report.failing_with_expected == 0
    assert "has no expected values" in str(report)


def test_feedback_report_errors_name_what_is_wrong():
    with pytest.raises(mk.ScorerError, match=r"no column\(s\) \['feedback'\]"):
        feedback_report(pd.DataFrame({"score": [1.0]}))
    scored = _scored(returning(lambda o, w: "Wrong."), tickets(["other"], ["billing"]))
    with pytest.raises(mk.ScorerError, match="cases has 2 rows and scored 1"):
        feedback_report(scored, cases=tickets(["a", "b"], ["a", "b"]))
    with pytest.raises(mk.ScorerError, match="expected the DataFrame score_cases returns"):
        feedback_report([1, 2])


def test_feedback_report_refuses_a_reordered_table_and_names_the_row():
    rows = pd.read_json(CASES_DIR / "tickets.jsonl", lines=True).head(300)
    scored = _scored(CASES_DIR / "useful_feedback.py", rows)
    assert feedback_report(scored, cases=rows).names_expected_share == 1.0
    reordered = scored.sort_values("score")
    first = reordered.iloc[0]
    with pytest.raises(mk.ScorerError, match="not in the same order") as err:
        feedback_report(reordered, cases=rows)
    message = str(err.value)
    assert f"row 0 of scored has case_id={first['case_id']!r}, " in message
    assert f"candidate={first['candidate']!r}" in message
    assert f"row 0 of cases has case_id={rows['case_id'][0]!r}" in message
    assert "keys=[..., 'output', 'expected']" in message
    # a reset index does not hide it, and the same keys in the same order pass
    with pytest.raises(mk.ScorerError, match="row 0 of scored"):
        feedback_report(reordered.reset_index(drop=True), cases=rows)
    # keeping output and expected in scored needs no cases at all, in any order
    kept = _scored(CASES_DIR / "useful_feedback.py", rows,
                   keys=["case_id", "candidate", "output", "expected"])
    assert feedback_report(kept.sort_values("score")).names_expected_share == 1.0


def test_feedback_report_checks_only_the_keys_both_tables_have():
    cases = tickets(["other", "billing"], ["billing", "billing"])
    scored = _scored(returning(lambda o, w: f"Expected {w!r}, got {o!r}."), cases)
    # the case table without case_id: nothing to check, paired row by row
    bare = [{k: v for k, v in c.items() if k != "case_id"} for c in cases]
    assert feedback_report(scored, cases=bare).names_expected_share == 1.0
    swapped = [cases[1], cases[0]]
    with pytest.raises(mk.ScorerError, match="row 0 of scored has case_id='t0'"):
        feedback_report(scored, cases=swapped)
