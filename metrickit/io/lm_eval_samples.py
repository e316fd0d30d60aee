"""lm-evaluation-harness ``--log_samples`` output as trial tables.

``lm_eval --output_path out/ --log_samples`` writes, per run, into ``out/<model>/``: one
``results_<date>.json`` (aggregates and the run's configuration) and one
``samples_<task>_<date>.jsonl`` per task (one JSON object per document and filter, with
``doc_id``, ``filter``, ``metrics`` and each metric's per-document value).
:func:`read_lm_eval_samples` turns them into one row per (task, document), with the columns
of :func:`metrickit.read_harbor_job`:

``job``
    the run's date id (the ``<date>`` of its file names).
``agent``, ``agent_version``
    ``"lm-eval"`` and the results file's ``lm_eval_version``.
``model``, ``model_provider``
    the results file's ``model_name`` (as lm-eval writes it, e.g. ``EleutherAI/pythia-160m``)
    and the model backend (``config.model``: ``hf``, ``vllm``, ``openai-completions``, ...).
``source``, ``eval``
    the lm-eval task (subtask) name; ``eval`` is ``lm-eval__<model>__<task>``.
``task_name``, ``attempt``, ``trial_name``
    ``doc_id`` as text (unique within its lm-eval task only: two tasks both have a
    document ``0``; tell them apart by ``source``/``eval``), attempt 1 (lm-eval logs one
    value per document even with ``repeats``, already reduced over the repeats), and
    ``<task>/<doc_id>``.
``<metric>``, ``<metric>,<filter>``
    one reward column per metric key listed in the records' ``metrics``: named as in the
    results file (``acc``, ``exact_match,strict-match``) without the default filter's
    ``,none``. A task whose metrics are all under ``none`` gives plain ``acc``, ``acc_norm``.
    Values keep their JSON kind. A metric whose per-document value is not a number (corpus
    metrics such as ``bleu`` log ``[reference, prediction]`` pairs) raises, naming the
    ``metrics=`` argument that leaves it out. Zero-fill: keys are per task (one evaluation
    each), so a metric of another task is NA, never 0.
``_status``, ``has_reward``, ``reward_valid``
    ``ok``, True, True: lm-eval logs only documents it scored.
``trial_dir``
    the samples file. Tokens, cost, times and exceptions: null (lm-eval does not log them
    per document).

Reads plain JSON; ``lm_eval`` itself is not needed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metrickit._core.schema import eval_key
from metrickit.errors import TrialSourceError
from metrickit.io.trials import Backend, build_trials, empty_row

__all__ = ["read_lm_eval_samples"]

_RESULTS = re.compile(r"^results_(?P<date>.+)\.json$")
# lm-eval's own rule (lm_eval.utils.get_file_task_name/get_file_datetime): the task is
# between the first "_" and the last "_", the date after the last "_"
_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>[^_]+)\.jsonl$")


def read_lm_eval_samples(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    metrics: Sequence[str] | None = None,
    backend: Backend = "pandas",
) -> Any:
    """Read lm-evaluation-harness ``--log_samples`` output into one row per document.

    Parameters
    ----------
    path
        The ``--output_path`` folder (every ``results_<date>.json`` below it is read with
        its ``samples_<task>_<date>.jsonl`` files), one model's folder, a results file, or a
        list of these.
    metrics
        The metric keys to read (``["acc", "exact_match,strict-match"]``, named as the
        reward columns are); None (default) reads every metric the records list.
    backend
        ``"pandas"`` (default) or ``"polars"``.

    Returns
    -------
    DataFrame
        The trial table (see the module docstring for the columns), runs in file-name
        order, tasks in name order, documents in file order.

    Raises
    ------
    TrialSourceError
        No results file, a run without samples files, a line that is not a JSON object with
        ``doc_id``, a non-numeric metric value, a metric given twice for one document (the
        message names file, line, document, metric and value).

    Examples
    --------
    >>> import metrickit as mk
    >>> trials = mk.read_lm_eval_samples("output/")        # doctest: +SKIP
    >>> mk.breakdown(trials, by="source", value="acc")      # doctest: +SKIP
    """
    if backend not in ("pandas", "polars"):
        raise ValueError(f"backend={backend!r}; expected 'pandas' or 'polars'")
    wanted = None if metrics is None else set(metrics)
    rows: list[dict[str, Any]] = []
    rewards: list[dict[str, Any] | None] = []
    where: list[str] = []
    seen_keys: set[str] = set()
    for results_file in _results_files(path):
        _read_run(results_file, wanted, rows, rewards, where, seen_keys)
    if wanted is not None and wanted - seen_keys:
        raise TrialSourceError(
            f"metrics={sorted(wanted - seen_keys)} not found in any samples file; the records "
            f"have {sorted(seen_keys)}"
        )
    return build_trials(rows, rewards, backend, where=where)


def _results_files(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    roots = [path] if isinstance(path, str | os.PathLike) else list(path)
    if not roots:
        raise TrialSourceError("read_lm_eval_samples got an empty list; pass an output folder")
    files: list[Path] = []
    for root in roots:
        p = Path(root)
        if p.is_dir():
            found = sorted(f for f in p.rglob("results_*.json") if _RESULTS.match(f.name))
            if not found:
                raise TrialSourceError(
                    f"{p}: no lm-eval results_<date>.json in this folder or below; expected "
                    "the --output_path of an `lm_eval ... --log_samples` run"
                )
            files.extend(found)
        elif p.is_file() and _RESULTS.match(p.name):
            files.append(p)
        elif p.exists():
            raise TrialSourceError(
                f"{p}: not an lm-eval results file; expected results_<date>.json or a folder"
            )
        else:
            raise TrialSourceError(f"{p}: no such file or folder")
    return files


def _read_run(
    results_file: Path,
    wanted: set[str] | None,
    rows: list[dict[str, Any]],
    rewards: list[dict[str, Any] | None],
    where: list[str],
    seen_keys: set[str],
) -> None:
    match = _RESULTS.match(results_file.name)
    assert match is not None
    date = match.group("date")
    try:
        results = json.loads(results_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TrialSourceError(f"{results_file}: not a readable JSON file ({exc})") from None
    if not isinstance(results, dict):
        raise TrialSourceError(
            f"{results_file}: expected a JSON object, got {type(results).__name__}"
        )
    config = results.get("config") or {}
    model = results.get("model_name") or None
    base = empty_row()
    base.update(
        job=date,
        agent="lm-eval",
        agent_version=results.get("lm_eval_version"),
        model=model,
        model_provider=config.get("model") if isinstance(config, dict) else None,
    )
    samples = []
    for f in sorted(results_file.parent.glob(f"samples_*_{date}.jsonl")):
        m = _SAMPLES.match(f.name)
        if m and m.group("date") == date:
            samples.append((m.group("task"), f))
    if not samples:
        raise TrialSourceError(
            f"{results_file}: no samples_<task>_{date}.jsonl beside it; run lm_eval with "
            "--log_samples to log per-document results"
        )
    for task, file in samples:
        _read_samples(task, file, base, wanted, rows, rewards, where, seen_keys)


def _read_samples(
    task: str,
    file: Path,
    base: dict[str, Any],
    wanted: set[str] | None,
    rows: list[dict[str, Any]],
    rewards: list[dict[str, Any] | None],
    where: list[str],
    seen_keys: set[str],
) -> None:
    by_doc: dict[str, int] = {}
    with file.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            label = f"{file}:{number}"
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise TrialSourceError(f"{label}: not a JSON line ({exc})") from None
            if not isinstance(record, dict) or "doc_id" not in record:
                raise TrialSourceError(f"{label}: expected a JSON object with 'doc_id'")
            doc = str(record["doc_id"])
            filt = record.get("filter", "none")
            if doc not in by_doc:
                by_doc[doc] = len(rows)
                row = dict(base)
                row.update(
                    source=task,
                    eval=eval_key("lm-eval", base["model"], task),
                    task_name=doc,
                    attempt=1,
                    trial_name=f"{task}/{doc}",
                    trial_dir=str(file),
                    reward_valid=True,
                )
                rows.append(row)
                rewards.append({})
                where.append(f"{label} (doc_id {doc})")
            reward = rewards[by_doc[doc]]
            assert reward is not None
            for metric in record.get("metrics") or []:
                key = metric if filt in (None, "none") else f"{metric},{filt}"
                seen_keys.add(key)
                if wanted is not None and key not in wanted:
                    continue
                value = record.get(metric)
                if key in reward:
                    raise TrialSourceError(
                        f"{label}: doc_id {doc}: metric {key!r} given twice for this document "
                        f"({reward[key]!r} and {value!r}); expected one record per document "
                        "and filter"
                    )
                if isinstance(value, bool | int | float) and not (
                    isinstance(value, float) and value != value
                ):
                    reward[key] = value
                    continue
                raise TrialSourceError(
                    f"{label}: doc_id {doc}: metric {key!r} is {str(value)[:80]!r} "
                    f"({type(value).__name__}), not a per-document number (corpus metrics "
                    "such as bleu log pairs to aggregate later); expected a number or a bool, "
                    f"or leave it out with metrics=[...] (the other keys: "
                    f"{sorted(k for k in seen_keys if k != key)})"
                )
