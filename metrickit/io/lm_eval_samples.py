"""lm-evaluation-harness ``--log_samples`` output as trial tables.

``lm_eval --output_path out/ --log_samples`` writes, per run, into ``out/<model>/``: one
``results_<date>.json`` (aggregates and the run's configuration) and one
``samples_<task>_<date>.jsonl`` per task (one JSON object per document and filter, with
``doc_id``, ``filter``, ``metrics`` and each metric's per-document value).
:func:`read_lm_eval_samples` turns them into one row per (task, document), with the columns
of :func:`metrickit.read_harbor_job`:

``run``, ``job``
    the results file's path (one ``results_<date>.json`` is one run) and the run's date id
    (the ``<date>`` of its file names).
``candidate``
    the label of the run's recorded configuration (``metrickit._core.identity``): runs of
    one model, settings (below) and dataset pool, any difference keeps them apart. A run of
    many subtasks is one candidate (its ``dataset`` is one).
``agent``, ``agent_version``, ``harness_version``
    ``"lm-eval"``, null, and the results file's ``lm_eval_version``: lm-eval is the
    harness, so its version is not part of the configuration.
``agent_kwargs``, ``kwarg_<name>``
    the run's settings as canonical JSON, one ``kwarg_<name>`` text column each: two runs
    with different settings never pool. ``config.model_args`` (an object as lm-eval >= 0.4.5
    writes it; the older ``pretrained=x,dtype=float16`` text parsed into its pairs),
    ``config.gen_kwargs`` as ``gen_kwargs.<name>`` (``gen_kwargs.temperature``), and the
    few-shot count of ``n-shot`` as ``num_fewshot`` (``num_fewshot.<task>`` when the run's
    tasks differ).
``dataset``, ``dataset_version``, ``task_group``
    the run's top-level lm-eval groups (from ``group_subtasks``) and the tasks outside any
    group, sorted and joined with ``+`` (mmlu's 57 subtasks: ``mmlu``; ``--tasks
    arc_easy,hellaswag``: ``arc_easy+hellaswag``); the one version ``versions`` records for
    them (null when they differ or record none: ``Yaml`` is lm-eval's placeholder); the
    subtask's own group (``mmlu_stem``), null outside a group.
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
``trial_dir``, ``format``
    the samples file; ``"lm-eval"``. Tokens, cost, times and exceptions: null (lm-eval does
    not log them per document).

Reads plain JSON; ``lm_eval`` itself is not needed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metrickit._core.identity import canonical_kwargs
from metrickit._core.schema import check_backend, eval_key
from metrickit._core.values import describe_value
from metrickit.errors import TrialSourceError
from metrickit.io.trials import Backend, build_trials, empty_row, guarded, reading

__all__ = ["read_lm_eval_samples"]

_RESULTS = re.compile(r"^results_(?P<date>.+)\.json$")
# lm-eval's own rule (lm_eval.utils.get_file_task_name/get_file_datetime): the task is
# between the first "_" and the last "_", the date after the last "_"
_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>[^_]+)\.jsonl$")


@guarded("read_lm_eval_samples")
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
        ``doc_id``, a line that is not UTF-8, ``metrics`` that is not a list of metric
        names, a non-numeric metric value, a metric given twice for one document, a field
        of the results file of the wrong type (the message names file, line, document,
        field or metric and value).

    Examples
    --------
    >>> import metrickit as mk
    >>> trials = mk.read_lm_eval_samples("output/")        # doctest: +SKIP
    >>> mk.breakdown(trials, by="source", value="acc")      # doctest: +SKIP
    """
    check_backend(backend)
    wanted = None if metrics is None else set(metrics)
    rows: list[dict[str, Any]] = []
    rewards: list[dict[str, Any] | None] = []
    where: list[str] = []
    seen_keys: set[str] = set()
    for results_file in _results_files(path):
        with reading(results_file):
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
        results = json.loads(results_file.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise TrialSourceError(f"{results_file}: not a readable JSON file ({exc})") from None
    if not isinstance(results, dict):
        raise TrialSourceError(
            f"{results_file}: expected a JSON object, got {type(results).__name__}"
        )
    config = results.get("config") or {}
    if not isinstance(config, dict):
        raise TrialSourceError(
            f"{results_file}: field 'config' is {config!r} ({type(config).__name__}); "
            "expected an object (the run's model and arguments)"
        )
    for name, value in (("model_name", results.get("model_name")),
                        ("lm_eval_version", results.get("lm_eval_version")),
                        ("config.model", config.get("model"))):
        if value is not None and not isinstance(value, str):
            raise TrialSourceError(
                f"{results_file}: field {name!r} is {describe_value(value)}; expected text or "
                "null"
            )
    model = results.get("model_name") or None
    version = results.get("lm_eval_version")
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
    tasks = [task for task, _ in samples]
    parent = _parents(results_file, results.get("group_subtasks"))
    base = empty_row()
    base.update(
        # one results file is one run; its path tells two runs of one date apart
        run=str(results_file),
        job=date,
        agent="lm-eval",
        # lm-eval is the harness, not the system under test: its version is recorded as
        # harness_version and, as for every format, does not split candidates
        agent_version=None,
        model=model,
        model_provider=config.get("model"),
        agent_kwargs=canonical_kwargs(_settings(results_file, results, config, tasks)),
        dataset=_dataset(tasks, parent),
        dataset_version=_version(results_file, results.get("versions"), tasks, parent),
        harness_version=version,
        format="lm-eval",
    )
    for task, file in samples:
        base["task_group"] = parent.get(task)
        _read_samples(task, file, base, wanted, rows, rewards, where, seen_keys)


def _parents(results_file: Path, group_subtasks: Any) -> dict[str, str]:
    """Each task's (or group's) own group, from ``group_subtasks`` (``{group: [children]}``;
    lm-eval also lists a task outside any group as ``{task: []}``)."""
    if group_subtasks is None:
        return {}
    if not isinstance(group_subtasks, dict) or not all(
        isinstance(v, list) and all(isinstance(c, str) for c in v)
        for v in group_subtasks.values()
    ):
        raise TrialSourceError(
            f"{results_file}: field 'group_subtasks' is {str(group_subtasks)[:80]!r}; "
            "expected an object of group names to lists of task names"
        )
    parent: dict[str, str] = {}
    for group, children in group_subtasks.items():
        for child in children:
            parent.setdefault(child, group)
    return parent


def _dataset(tasks: list[str], parent: dict[str, str]) -> str:
    """What the run evaluated on: its top-level groups (and the tasks outside any group),
    sorted and joined with ``+`` (a run of mmlu's 57 subtasks is ``mmlu``, one dataset)."""
    tops = set()
    for task in tasks:
        seen = {task}
        while task in parent and parent[task] not in seen:  # a cycle cannot loop forever
            task = parent[task]
            seen.add(task)
        tops.add(task)
    return "+".join(sorted(tops))


def _version(
    results_file: Path, versions: Any, tasks: list[str], parent: dict[str, str]
) -> str | None:
    """The run's one dataset version: the version ``versions`` gives its top-level groups
    (else its tasks) when they all agree; None when none is recorded or they differ.
    ``Yaml`` is lm-eval's placeholder for a task YAML without ``metadata.version``."""
    if versions is None:
        return None
    if not isinstance(versions, dict):
        raise TrialSourceError(
            f"{results_file}: field 'versions' is {str(versions)[:80]!r}; expected an object "
            "of task names to versions"
        )
    tops = _dataset(tasks, parent).split("+")
    for names in (tops, tasks):
        found = {str(versions[n]) for n in names if versions.get(n) not in (None, "Yaml")}
        if found:
            return found.pop() if len(found) == 1 else None
    return None


def _settings(results_file: Path, results: dict[str, Any], config: dict[str, Any],
              tasks: list[str]) -> dict[str, Any]:
    """What the run records of how the model was set up: ``config.model_args`` as they are,
    ``config.gen_kwargs`` (``--gen_kwargs``) as ``gen_kwargs.<name>``, and the number of
    few-shot examples from ``n-shot`` as ``num_fewshot`` (``num_fewshot.<task>`` when the
    tasks differ). Two runs that differ in any of them are two candidates; seeds, batch size
    and device are how the run was made, not what was evaluated."""
    settings = _arguments(results_file, "config.model_args", config.get("model_args"))
    gen = _arguments(results_file, "config.gen_kwargs", config.get("gen_kwargs"))
    settings.update({f"gen_kwargs.{name}": value for name, value in gen.items()})
    shots = results.get("n-shot")
    if shots is None:
        return settings
    if not isinstance(shots, dict):
        raise TrialSourceError(
            f"{results_file}: field 'n-shot' is {describe_value(shots)}; expected an object "
            "of each task's number of few-shot examples"
        )
    mine = {task: shots[task] for task in tasks if task in shots}
    if len(set(map(repr, mine.values()))) == 1:
        settings["num_fewshot"] = next(iter(mine.values()))
    else:
        settings.update({f"num_fewshot.{task}": n for task, n in sorted(mine.items())})
    return settings


def _arguments(results_file: Path, field: str, value: Any) -> dict[str, Any]:
    """An argument field as a dict: lm-eval >= 0.4.5 writes an object, earlier ones the
    command line's text (``pretrained=x,dtype=float16``), parsed into its pairs; text that
    is not such pairs is kept whole under the field's own name."""
    if value is None or value == "":
        return {}
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, str):
        pairs = [part.partition("=") for part in value.split(",") if part.strip()]
        if pairs and all(sep and key.strip() for key, sep, _ in pairs):
            return {key.strip(): part.strip() for key, _, part in pairs}
        return {field.rpartition(".")[2]: value}
    raise TrialSourceError(
        f"{results_file}: field {field!r} is {value!r} "
        f"({type(value).__name__}); expected an object or key=value text"
    )


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
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            label = f"{file}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad = raw[max(exc.start - 10, 0):exc.end + 10]
                raise TrialSourceError(
                    f"{label}: not UTF-8 (bytes {raw[exc.start:exc.end]!r} at byte "
                    f"{exc.start} of the line, in {bad!r}); lm-eval writes UTF-8 JSON lines: "
                    "re-save the file as UTF-8"
                ) from None
            try:
                record = json.loads(line)
            except (ValueError, RecursionError) as exc:
                raise TrialSourceError(f"{label}: not a JSON line ({exc})") from None
            if not isinstance(record, dict) or "doc_id" not in record:
                raise TrialSourceError(f"{label}: expected a JSON object with 'doc_id'")
            doc_id, filt, metrics = record["doc_id"], record.get("filter", "none"), \
                record.get("metrics") or []
            if isinstance(doc_id, bool) or not isinstance(doc_id, int | str):
                raise TrialSourceError(
                    f"{label}: field 'doc_id' is {describe_value(doc_id)}; expected the "
                    "document's number (or text)"
                )
            if filt is not None and not isinstance(filt, str):
                raise TrialSourceError(
                    f"{label}: field 'filter' is {describe_value(filt)}; expected the filter's "
                    "name ('none', 'strict-match', ...) or null"
                )
            if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
                raise TrialSourceError(
                    f"{label}: field 'metrics' is {describe_value(metrics)}; expected a list of "
                    "metric names (['acc', 'acc_norm']), each a key of the record"
                )
            doc = str(doc_id)
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
            for metric in metrics:
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
