"""Who a trial belongs to: the one rule for runs and candidates, used by every reader, by
:func:`metrickit.concat_trials` and by :func:`metrickit.load`.

A **run** is one execution a trial came from (a Harbor job, a Terminal-Bench run, an Inspect
log, an lm-eval output file, a tidy table). A **candidate** is one recorded configuration of
the system under test: the values of :data:`CONFIG_COLUMNS`. Runs with identical recorded
configurations pool into one candidate; runs that differ in any recorded part never do. A
run whose model (and tidy ``variant``) is not recorded pools with nothing: two such runs
cannot be told to be the same system, so they stay apart (see :func:`candidate_summary`).

The label of a candidate is short and unique: ``agent · model`` (or the ``variant`` a tidy
table names), plus only the parts that tell two candidates with the same start apart
(``harness=pi``, ``agent_version=1.2``), and the run where nothing recorded differs.

Plain Python on the distinct configurations (a few per table), so the cost does not grow
with the number of trials beyond one factorisation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from metrickit._core.values import is_null

#: The recorded parts of a configuration: two runs are one candidate only when all agree.
#: ``dataset`` is what the candidate was evaluated on (a model on two datasets is two
#: candidates, whose means are over different tasks); ``source`` names the tasks (a task is
#: ``(source, task_name)``) and is usually the dataset, but not always (lm-eval: a subtask).
CONFIG_COLUMNS = (
    "agent", "agent_version", "model", "model_provider", "variant", "agent_kwargs",
    "dataset", "dataset_version",
)
#: A run pools with other runs only when one of these is recorded.
POOLING_PARTS = ("model", "variant")
#: Each agent kwarg is also a column of its own: ``kwarg_<name>``.
KWARG_PREFIX = "kwarg_"
SEP = " · "
# The order in which parts are added to tell colliding labels apart (kwargs come after,
# fewest distinct values first, then the run).
_DISTINGUISH = ("model_provider", "agent_version", "dataset", "dataset_version")
NOT_SET = "(not set)"


def canonical_kwargs(kwargs: Mapping[str, Any] | None) -> str | None:
    """Agent kwargs as canonical JSON (sorted keys, no spaces); None or ``{}`` is None.

    Examples
    --------
    >>> canonical_kwargs({"mode": "fake", "harness": "pi"})
    '{"harness":"pi","mode":"fake"}'
    >>> canonical_kwargs({}) is None
    True
    """
    if not kwargs:
        return None
    return json.dumps(kwargs, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def kwarg_text(value: Any) -> str:
    """One kwarg's value as text: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def kwarg_columns(kwargs_json: Sequence[str | None]) -> dict[str, list[str | None]]:
    """``kwarg_<name>`` columns from the canonical kwargs of each row (None where a row's
    kwargs lack the name)."""
    parsed: dict[str, dict[str, Any]] = {}
    for text in set(kwargs_json):
        if text is not None:
            parsed[text] = json.loads(text)
    names = sorted({name for kw in parsed.values() for name in kw})
    return {
        KWARG_PREFIX + name: [
            kwarg_text(parsed[t][name]) if t is not None and name in parsed[t] else None
            for t in kwargs_json
        ]
        for name in names
    }


def _clean(value: Any) -> Any:
    return None if is_null(value) else value


def candidate_keys(
    runs: Sequence[Any], configs: Sequence[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    """The identity of each distinct (run, configuration): the configuration itself when it
    may pool (a model or variant is recorded), else the configuration and the run."""
    model_at = CONFIG_COLUMNS.index("model")
    variant_at = CONFIG_COLUMNS.index("variant")
    keys = []
    for run, config in zip(runs, configs, strict=True):
        poolable = config[model_at] is not None or config[variant_at] is not None
        keys.append(config if poolable else (*config, ("run", run)))
    return keys


def candidate_labels(
    keys: Sequence[tuple[Any, ...]], runs_of: Mapping[tuple[Any, ...], list[Any]]
) -> dict[tuple[Any, ...], str]:
    """A short unique label for each distinct candidate key (see the module docstring)."""
    at = {name: i for i, name in enumerate(CONFIG_COLUMNS)}
    distinct = list(dict.fromkeys(keys))
    kwargs = {k: json.loads(k[at["agent_kwargs"]]) if k[at["agent_kwargs"]] else {}
              for k in distinct}
    labels: dict[tuple[Any, ...], list[str]] = {}
    for k in distinct:
        base = [str(k[at[p]]) for p in ("agent", "model", "variant") if k[at[p]] is not None]
        if not base:
            base = [f"run {_runs_text(runs_of[k])}"]
        labels[k] = base
    # Refine colliding labels part by part until every label is unique.
    for _ in range(len(CONFIG_COLUMNS) + 64):
        groups: dict[str, list[tuple[Any, ...]]] = {}
        for k in distinct:
            groups.setdefault(SEP.join(labels[k]), []).append(k)
        clashes = [g for g in groups.values() if len(g) > 1]
        if not clashes:
            break
        for group in clashes:
            part = _telling_part(group, at, kwargs)
            for k in group:
                if part is None:  # nothing recorded differs: the runs tell them apart
                    labels[k].append(f"run {_runs_text(runs_of[k])}")
                elif part in at:
                    value = k[at[part]]
                    labels[k].append(f"{part}={NOT_SET if value is None else value}")
                else:
                    shown = kwarg_text(kwargs[k][part]) if part in kwargs[k] else NOT_SET
                    labels[k].append(f"{part}={shown}")
    out = {k: SEP.join(v) for k, v in labels.items()}
    # Parts that differ but print alike (a kwarg 1 and "1") leave a clash: number them, so
    # two configurations never share a label
    seen: dict[str, int] = {}
    for k in distinct:
        n = seen.get(out[k], 0) + 1
        seen[out[k]] = n
        if n > 1:
            out[k] = f"{out[k]} #{n}"
    return out


def _runs_text(runs: list[Any]) -> str:
    shown = [str(r) for r in runs[:2]]
    return "+".join(shown) + (f"+{len(runs) - 2} more" if len(runs) > 2 else "")


def _telling_part(
    group: list[tuple[Any, ...]], at: dict[str, int], kwargs: dict[tuple[Any, ...], dict[str, Any]]
) -> str | None:
    """The first part whose values differ within ``group``: the fixed parts in order, then
    the kwarg with the fewest distinct values (then by name); None when none differs."""
    for part in _DISTINGUISH:
        if len({k[at[part]] for k in group}) > 1:
            return part
    names = sorted({n for k in group for n in kwargs[k]})
    spread = []
    for name in names:
        values = {kwarg_text(kwargs[k][name]) if name in kwargs[k] else None for k in group}
        if len(values) > 1:
            spread.append((len(values), name))
    return min(spread)[1] if spread else None


def assign_candidates(columns: dict[str, list[Any]]) -> None:
    """Fill ``columns["candidate"]`` (and the ``kwarg_<name>`` columns) from the ``run`` and
    :data:`CONFIG_COLUMNS` lists of one table, in place."""
    n = len(columns["run"])
    # Each distinct row of (run, configuration) is cleaned and labelled once; the rows then
    # look their label up (a table has few configurations and many trials).
    raw = list(zip(columns["run"], *(columns.get(c) or [None] * n for c in CONFIG_COLUMNS),
                   strict=True)) if n else []
    try:
        distinct = list(dict.fromkeys(raw))
    except TypeError:  # a value that cannot be hashed: each row on its own
        distinct = raw
    cleaned = [(_clean(r[0]), tuple(_clean(v) for v in r[1:])) for r in distinct]
    pairs = list(dict.fromkeys(cleaned))
    keys = candidate_keys([p[0] for p in pairs], [p[1] for p in pairs])
    key_of = dict(zip(pairs, keys, strict=True))
    runs_of: dict[tuple[Any, ...], list[Any]] = {}
    for (run, _), key in key_of.items():
        runs_of.setdefault(key, [])
        if run not in runs_of[key]:
            runs_of[key].append(run)
    label_of = candidate_labels(keys, runs_of)
    if distinct is raw:
        columns["candidate"] = [label_of[key_of[p]] for p in cleaned]
    else:
        row_label = {r: label_of[key_of[p]] for r, p in zip(distinct, cleaned, strict=True)}
        columns["candidate"] = [row_label[r] for r in raw]
    for name, values in kwarg_columns(
        [_clean(v) for v in (columns.get("agent_kwargs") or [None] * n)]
    ).items():
        columns[name] = values


def with_candidates(frame: Any) -> Any:
    """``frame`` (pandas or polars trial table) with ``candidate`` and the ``kwarg_<name>``
    columns computed anew from its ``run`` and configuration columns: after tables of
    several sources are stacked, a label must be unique across all of them."""
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=True)
    if "run" not in nf.columns:
        return frame
    parts = ["run", *(c for c in CONFIG_COLUMNS if c in nf.columns)]
    distinct = nf.select(parts).unique(maintain_order=True)
    columns = {c: distinct.get_column(c).to_list() for c in parts}
    assign_candidates(columns)
    lookup = {
        tuple(_clean(columns[c][i]) for c in parts): columns["candidate"][i]
        for i in range(len(distinct))
    }
    rows = zip(*(nf.get_column(c).to_list() for c in parts), strict=True)
    labels = [lookup[tuple(_clean(v) for v in row)] for row in rows]
    new = {"candidate": labels}
    stale: list[str] = []
    if "agent_kwargs" in nf.columns:
        kw = kwarg_columns([_clean(v) for v in nf.get_column("agent_kwargs").to_list()])
        stale = [c for c in nf.columns if c.startswith(KWARG_PREFIX) and c not in kw]
        new.update(kw)
    native = nf.to_native()
    if type(native).__module__.startswith("polars"):
        import polars as pl

        out = native.drop(stale).with_columns(
            [pl.Series(name, values, dtype=pl.String) for name, values in new.items()]
        )
        return out
    from metrickit._core.schema import pandas_strings

    out = native.drop(columns=stale).copy()
    for name, values in new.items():
        out[name] = pandas_strings(values)
    return out


def candidate_summary(trials: Any, *, by: str = "candidate") -> Any:
    """One row per candidate (or ``by`` group): the runs it pools, how many, and what was
    not recorded about it (pandas DataFrame). ``pooled`` is True when several runs pool.

    Examples
    --------
    >>> import pandas as pd
    >>> t = with_candidates(pd.DataFrame({"run": ["r1", "r2", "r3"], "agent": "x",
    ...                                   "model": ["m", "m", None]}))
    >>> candidate_summary(t)[["candidate", "n_runs", "not_recorded"]].values.tolist()
    [['x · m', 2, ''], ['x', 1, 'model']]
    """
    import narwhals as nw
    import pandas as pd

    nf = nw.from_native(trials, eager_only=True)
    if by not in nf.columns:
        raise KeyError(f"by={by!r} is not a column; columns are {list(nf.columns)}")
    cols = [by, *(c for c in ("run", "agent", "model") if c in nf.columns)]
    df = nf.select(cols).to_pandas()
    out = []
    for label, part in df.groupby(by, sort=False, dropna=False):
        runs = list(dict.fromkeys(part["run"].tolist())) if "run" in part else []
        missing = [c for c in ("agent", "model") if c in part and part[c].isna().all()]
        out.append({
            by: label, "runs": runs, "n_runs": len(runs), "pooled": len(runs) > 1,
            "not_recorded": ", ".join(missing),
        })
    return pd.DataFrame(out, columns=[by, "runs", "n_runs", "pooled", "not_recorded"])


def pooling_notes(trials: Any, *, by: str = "candidate") -> list[str]:
    """The sentences every output that groups by candidate shows: which candidates pool
    several runs, and which runs were kept apart because their model is not recorded."""
    try:
        summary = candidate_summary(trials, by=by)
    except KeyError:
        return []
    notes = []
    for row in summary.itertuples(index=False):
        label = getattr(row, by) if by.isidentifier() else row[0]
        if row.pooled:
            notes.append(f"{label}: pooled from {row.n_runs} runs with identical recorded "
                         "configurations")
        if by == "candidate" and "model" in row.not_recorded:
            notes.append(f"{label}: no model recorded, so its run is kept apart from others")
    return notes
