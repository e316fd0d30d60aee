"""A task id is only unique within its source: sample 0 of one lm-eval task is not sample 0
of another, so pairing and clustering never merge them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import metrickit as mk
from metrickit.compute.stats import task_codes


def _two_sources() -> pd.DataFrame:
    rows = []
    for source, a_wins in (("gsm8k", True), ("arc", False)):
        for doc in range(6):
            for run in ("a", "b"):
                good = (run == "a") == a_wins
                rows.append({"id": str(doc), "run": run, "task": source,
                             "correct": int(good if doc < 5 else not good)})
    df = pd.DataFrame(rows)
    return mk.trials_from_frame(df, task="id", candidate="run", source="task", reward="correct")


def test_compare_runs_pairs_within_a_source():
    t = _two_sources()
    result = mk.compare_runs(t, "a", "b", by="eval", value="correct")
    assert result.n_tasks == 12  # 6 documents x 2 sources, not 6 merged ids
    assert set(result.tasks["task_name"]) == {f"{s}/{d}" for s in ("gsm8k", "arc")
                                             for d in range(6)}
    # per source the difference is +4/6 and -4/6: the pairs cancel, as they should
    assert result.difference.estimate == pytest.approx(0.0)


def test_clusters_are_source_and_task():
    t = _two_sources()
    codes, column = task_codes(t)
    assert column == "task_name" and len(np.unique(codes)) == 12
    one_source = t[t["source"] == "gsm8k"]
    codes, _ = task_codes(one_source)
    assert len(np.unique(codes)) == 6


def test_task_codes_keep_a_sourceless_task_apart_from_a_sources_task_of_that_spelling():
    # source "s" task "x" and a task literally named "s/x" without a source are two tasks
    # (their text labels would both read "s/x"); codes come from the two columns' codes
    import pandas as pd

    from metrickit.compute.tables import task_codes

    df = pd.DataFrame({"task_name": ["x", "s/x", "x", "y"], "source": ["s", None, "s", None]})
    codes, column = task_codes(df)
    assert column == "task_name"
    assert codes.tolist() == [0, 1, 0, 2]
