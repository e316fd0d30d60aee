"""The history of runs: trial tables kept in one embedded DuckDB database file.

:class:`RunStore` keeps every run it is given (keyed by the trial table's ``run``), lists
them, returns the trial table of any selection exactly as it was added, and gives each
run's estimate over time. Adding a run again is a no-op; a different table under a run id
the store holds already is refused (a run is a record of what happened: it does not
change). Writes are transactions, and a second process waits for the first (DuckDB allows
one writer per file) up to ``wait`` seconds, then fails with a message.

The database has two tables: ``runs`` (one row per run: its columns, fingerprint,
candidates, times) and ``trials`` (every trial of every run, one column per trial-table
column any run had; a run's rows in the order they were added). ``to_parquet`` writes the
trials as Parquet for Dask or any other reader.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from metrickit._core.display import result_html
from metrickit._core.values import is_null
from metrickit.errors import StoreError

__all__ = ["RunStore"]

_DERIVED = ("candidate",)  # recomputed on the way out: labels depend on the selection
_RUNS_DDL = """
CREATE TABLE IF NOT EXISTS runs (
    run VARCHAR PRIMARY KEY,
    seq BIGINT,
    fingerprint VARCHAR,
    columns VARCHAR[],
    n_trials BIGINT,
    n_tasks BIGINT,
    candidates VARCHAR[],
    formats VARCHAR[],
    harness_version VARCHAR,
    started_at TIMESTAMPTZ,
    finished_at TIMESTAMPTZ,
    added_at TIMESTAMPTZ
)
"""


class RunStore:
    """A run history in one DuckDB database file.

    Parameters
    ----------
    path
        The database file (created on first use; its folder must exist).
    wait
        Seconds to wait for another process that holds the file (default 30), then
        :class:`~metrickit.errors.StoreError`.

    Examples
    --------
    >>> import metrickit as mk, tempfile, os
    >>> store = mk.RunStore(os.path.join(tempfile.mkdtemp(), "runs.duckdb"))
    >>> store.add(mk.read_harbor_job(mk.examples.path("harbor_jobs") / "2025-06-02__10-00-00"))
    ['2025-06-02__10-00-00']
    >>> store.add(mk.read_harbor_job(mk.examples.path("harbor_jobs") / "2025-06-02__10-00-00"))
    []
    >>> store.runs()[["run", "n_trials"]].values.tolist()
    [['2025-06-02__10-00-00', 24]]
    """

    def __init__(self, path: str | os.PathLike[str], *, wait: float = 30.0) -> None:
        self.path = Path(path)
        self.wait = float(wait)
        if not self.path.parent.is_dir():
            raise StoreError(f"{self.path}: its folder {self.path.parent} does not exist")
        if self.path.exists():
            # A DuckDB file says so in its header: no connection needed to refuse another
            with open(self.path, "rb") as fh:
                magic = fh.read(12)[8:12]
            if magic != b"DUCK":
                raise StoreError(
                    f"{self.path}: cannot be opened as a run store (not a DuckDB database "
                    "file); pass a new path or an existing store"
                )
        else:
            with self._connect() as con:
                con.execute(_RUNS_DDL).fetchall()

    def __repr__(self) -> str:
        # no query: a repr must not wait for another process's lock
        return f"RunStore({str(self.path)!r})"

    def _repr_html_(self) -> str:
        try:
            runs = self.runs()
        except StoreError as exc:
            return result_html(f"Run store {self.path}: cannot be read now", None, [str(exc)])
        headline = (f"Run store {self.path}: {len(runs):,} run(s), "
                    f"{int(runs['n_trials'].sum()) if len(runs) else 0:,} trial(s)")
        shown = runs.iloc[::-1][["run", "candidates", "n_trials", "n_tasks", "added_at"]]
        notes = ["the latest runs first; .runs() lists them all"] if len(runs) > 15 else []
        return result_html(headline, shown, notes, title="RunStore")

    # -- connections ------------------------------------------------------------------

    @contextmanager
    def _connect(self, *, read_only: bool = False) -> Iterator[Any]:
        duckdb = _duckdb()
        deadline = time.monotonic() + self.wait
        delay = 0.05
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only and self.path.exists())
                break
            except duckdb.IOException as exc:
                text = str(exc)
                if "lock" not in text.lower():
                    raise StoreError(f"{self.path}: cannot be opened as a run store ({text})") \
                        from None
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"{self.path}: another process holds the run store (waited "
                        f"{self.wait:g} s; DuckDB allows one writer at a time). Try again when "
                        f"it is done, or pass a larger wait=. DuckDB says: {text}"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
            except duckdb.Error as exc:
                raise StoreError(f"{self.path}: cannot be opened as a run store ({exc})") \
                    from None
        try:
            yield con
        finally:
            con.close()

    # -- adding ---------------------------------------------------------------------

    def add(self, trials: Any) -> list[str]:
        """Store the runs of a trial table (pandas or polars); returns the run ids added.

        A run the store holds with the same trials is skipped (adding is idempotent); a
        run id it holds with different trials is refused with
        :class:`~metrickit.errors.StoreError` and nothing of this call is stored.
        """
        import narwhals as nw

        nf = nw.from_native(trials, eager_only=True)
        for needed in ("run", "task_name", "_status"):
            if needed not in nf.columns:
                raise StoreError(
                    f"the table has no {needed!r} column; a run store keeps trial tables "
                    "(from metrickit's readers, mk.load or trials_from_frame)"
                )
        from metrickit._core.schema import trial_dtypes

        df = trial_dtypes(nf.to_pandas())  # one set of dtypes whatever the backend
        if df["run"].isna().any():
            raise StoreError("the table has trials without a run; every trial needs one")
        if (df["_status"].astype(str) == "invalid").any():
            raise StoreError(
                "the table has invalid rows (from errors='report'); drop them before storing: "
                "they hold no trial"
            )
        plain = _plain(df)
        stored = [c for c in plain.columns if c not in _DERIVED and not c.startswith("kwarg_")]
        runs, rows_of, own_of = _runs_and_columns(plain, stored)
        hashes = {c: _column_hash(plain[c]) for c in stored}
        added: list[str] = []
        with self._connect() as con:
            held = {r: fp for r, fp in con.execute("SELECT run, fingerprint FROM runs").fetchall()}
            pending = []
            for run in runs:
                rows, own = rows_of[run], own_of[run]
                fingerprint = _fingerprint(own, [hashes[c][rows] for c in own])
                if run in held:
                    if held[run] != fingerprint:
                        raise StoreError(
                            f"run {run!r} is in the store already with different trials "
                            f"({len(rows):,} trials now); a stored run does not change: give "
                            "the new one another run id (trials_from_frame(run=...), a new "
                            "job name) or keep it in another store"
                        )
                    continue
                pending.append((str(run), rows, own, fingerprint))
            if not pending:
                return []
            keep = np.sort(np.concatenate([rows for _, rows, _, _ in pending]))
            con.execute("BEGIN TRANSACTION").fetchall()
            try:
                seq = con.execute("SELECT coalesce(max(seq), 0) FROM runs").fetchall()[0][0]
                next_row = self._row_offset(con)
                offset = next_row or 0
                body = plain.iloc[keep][stored].reset_index(drop=True)
                body.insert(0, "_seq", np.arange(offset, offset + len(body), dtype=np.int64))
                self._insert_trials(con, body, first=next_row is None)
                now = datetime.now(UTC)
                meta = _run_meta(plain.iloc[keep])
                catalog = []
                for run, rows, own, fingerprint in pending:
                    seq += 1
                    m = meta[run]
                    catalog.append([run, seq, fingerprint, own, len(rows), m["n_tasks"],
                                    m["candidate"], m["format"], m["harness_version"],
                                    m["started_at"], m["finished_at"], now])
                    added.append(run)
                con.executemany(
                    "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", catalog
                ).fetchall()
                con.execute("COMMIT").fetchall()
            except BaseException:
                con.execute("ROLLBACK").fetchall()
                raise
        return added

    @staticmethod
    def _row_offset(con: Any) -> int | None:
        """The ``_seq`` of the next stored trial; None before the first (no table yet)."""
        exists = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'trials'"
        ).fetchall()[0][0]
        if not exists:
            return None
        return int(con.execute("SELECT coalesce(max(_seq) + 1, 0) FROM trials").fetchall()[0][0])

    @staticmethod
    def _insert_trials(con: Any, body: Any, *, first: bool) -> None:
        con.register("_incoming", body)
        try:
            if first:
                con.execute("CREATE TABLE trials AS SELECT * FROM _incoming LIMIT 0").fetchall()
            have = {r[0] for r in con.execute("DESCRIBE trials").fetchall()}
            for name, kind, *_ in con.execute("DESCRIBE SELECT * FROM _incoming").fetchall():
                if name not in have:
                    con.execute(f"ALTER TABLE trials ADD COLUMN {_quote(name)} {kind}").fetchall()
            con.execute("INSERT INTO trials BY NAME SELECT * FROM _incoming").fetchall()
        finally:
            con.unregister("_incoming")

    # -- reading --------------------------------------------------------------------

    def runs(self) -> Any:
        """One row per run, in the order added: ``run``, ``candidates``, ``n_trials``,
        ``n_tasks``, ``formats``, ``harness_version``, ``started_at``, ``finished_at``,
        ``added_at`` (pandas DataFrame)."""
        with self._connect(read_only=True) as con:
            return con.execute(
                "SELECT run, candidates, n_trials, n_tasks, formats, harness_version, "
                "started_at, finished_at, added_at FROM runs ORDER BY seq"
            ).fetch_df()

    def resolve(self, name: str) -> str:
        """A run id from a name: the id itself, ``latest`` (the run added last) or
        ``previous`` (the one before it)."""
        with self._connect(read_only=True) as con:
            order = [r[0] for r in con.execute("SELECT run FROM runs ORDER BY seq").fetchall()]
        if name in order:
            return name
        if name in ("latest", "previous"):
            need = 1 if name == "latest" else 2
            if len(order) < need:
                raise StoreError(
                    f"{self.path}: {name!r} needs at least {need} run(s); the store holds "
                    f"{len(order)}"
                )
            return order[-need]
        shown = ", ".join(map(repr, order[-5:]))
        raise StoreError(
            f"{self.path}: no run {name!r}; the latest runs are {shown or 'none'} (or use "
            "'latest' / 'previous')"
        )

    def trials(
        self,
        runs: str | Sequence[str] | None = None,
        *,
        candidate: str | Sequence[str] | None = None,
        backend: Literal["pandas", "polars"] = "pandas",
    ) -> Any:
        """The trial table of the selected runs (all by default; ``latest``/``previous``
        work as names), optionally only some candidates, as it was added: the same
        columns in the same order, dtypes and rows (candidate labels are recomputed over
        the selection, so runs added apart that share a configuration pool)."""
        from metrickit._core.identity import with_candidates
        from metrickit._core.schema import canonical_order, check_backend, trial_dtypes

        check_backend(backend)
        names = None if runs is None else [runs] if isinstance(runs, str) else list(runs)
        if names is not None:
            names = [self.resolve(n) for n in names]
        with self._connect(read_only=True) as con:
            query = "SELECT run, columns FROM runs"
            params: list[Any] = []
            if names is not None:
                query += " WHERE run IN (SELECT unnest(?))"
                params.append(names)
            catalog = con.execute(query + " ORDER BY seq", params).fetchall()
            if not catalog:
                raise StoreError(f"{self.path}: the store holds no run" if names is None else
                                 f"{self.path}: no run among {names}")
            seen: list[str] = []
            for _, cols in catalog:
                seen.extend(c for c in cols if c not in seen)
            columns = canonical_order(seen)
            select = ", ".join(_quote(c) for c in columns)
            where = "run IN (SELECT unnest(?))"
            relation = con.sql(f"SELECT {select} FROM trials WHERE {where} ORDER BY _seq",
                               params=[[r for r, _ in catalog]])
            if backend == "polars":
                import polars as pl

                out = pl.from_arrow(relation.to_arrow_table())
            else:
                out = relation.df()
        out = trial_dtypes(_fill_kinds(out))
        out = with_candidates(_insert_candidate(out))
        if candidate is not None:
            wanted = [candidate] if isinstance(candidate, str) else list(candidate)
            out = _select_candidates(out, wanted)
        return out

    def history(
        self,
        candidate: str | None = None,
        *,
        value: str = "reward",
        by: str = "candidate",
    ) -> Any:
        """Each run's estimate of ``value`` per candidate, in time order: ``run``,
        ``candidate``, ``started_at``, ``mean``, ``ci_low``, ``ci_high``, ``n_tasks``,
        ``n`` (pandas DataFrame; the estimate and interval are
        :func:`metrickit.breakdown`'s, clustered by task)."""
        import pandas as pd

        from metrickit.compute.stats import breakdown

        trials = self.trials(candidate=candidate)
        if value not in trials.columns:
            raise StoreError(f"value={value!r} is not a column of the stored trials")
        table = breakdown(trials, by=["run", by], value=value)
        runs = self.runs()[["run", "started_at", "added_at"]]
        out = pd.merge(table, runs, on="run", how="left")
        out["_when"] = out["started_at"].fillna(out["added_at"])
        out = out.sort_values(["_when", "run"], kind="stable").drop(columns="_when")
        keep = ["run", by, "started_at", "mean", "ci_low", "ci_high", "n_tasks", "n", "note"]
        return out[[c for c in keep if c in out.columns]].reset_index(drop=True)

    def to_parquet(self, path: str | os.PathLike[str]) -> Path:
        """Write every stored trial to one Parquet file (for Dask: ``dd.read_parquet``)."""
        target = Path(path)
        with self._connect(read_only=True) as con:
            con.execute(
                f"COPY (SELECT * EXCLUDE (_seq) FROM trials ORDER BY _seq) TO "
                f"'{_sql_text(str(target))}' (FORMAT parquet)"
            ).fetchall()
        return target


# ---------------------------------------------------------------------------------------


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:
        raise StoreError(
            "the run store needs DuckDB: pip install 'metrickit[store]' (or duckdb)"
        ) from None
    return duckdb


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_text(text: str) -> str:
    return text.replace("'", "''")


def _plain(df: Any) -> Any:
    """The table with categories as text (DuckDB stores the values, not the codes)."""
    import pandas as pd

    out = df.copy()
    for name in out.columns:
        if isinstance(out[name].dtype, pd.CategoricalDtype):
            out[name] = out[name].astype(object).where(out[name].notna(), None).astype("string")
    return out


def _runs_and_columns(
    plain: Any, stored: list[str]
) -> tuple[list[str], dict[str, Any], dict[str, list[str]]]:
    """The runs of a table in order of first appearance, each run's row positions (in
    table order), and the columns each run has: all ``stored`` columns but the reward keys
    it never had (all NA with kind ``missing``: another run of the table had them)."""
    import pandas as pd

    codes, uniques = pd.factorize(plain["run"], sort=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    n_runs = len(uniques)
    keys = [c for c in stored if "_kind_" + c in stored]
    never: dict[str, np.ndarray] = {}
    for key in keys:
        has = (plain["_kind_" + key] != "missing").to_numpy(bool) | plain[key].notna().to_numpy()
        never[key] = np.bincount(codes, weights=has, minlength=n_runs) == 0
    runs = [str(u) for u in uniques]
    rows_of = {run: order[bounds[i]:bounds[i + 1]] for i, run in enumerate(runs)}
    own_of = {}
    for i, run in enumerate(runs):
        dropped = {k for k in keys if never[k][i]}
        dropped |= {"_kind_" + k for k in dropped}
        own_of[run] = [c for c in stored if c not in dropped]
    return runs, rows_of, own_of


def _column_hash(col: Any) -> np.ndarray:
    import pandas as pd

    return pd.util.hash_pandas_object(col, index=False).to_numpy()


def _fingerprint(columns: list[str], hashes: list[np.ndarray]) -> str:
    """A digest of a run's trials: its columns, their order and every value."""
    digest = hashlib.sha256()
    digest.update("\x1f".join(columns).encode())
    for h in hashes:
        digest.update(np.ascontiguousarray(h).tobytes())
    return digest.hexdigest()


def _run_meta(rows: Any) -> dict[str, dict[str, Any]]:
    """What the catalog keeps of each run, computed for all runs at once: its tasks,
    candidates, formats, harness version and first start and last finish."""
    groups = rows.groupby("run", sort=False)
    out: dict[str, dict[str, Any]] = {}
    n_tasks = groups["task_name"].nunique()
    lists = {c: groups[c].unique() for c in ("candidate", "format", "harness_version")
             if c in rows.columns}
    times = {c: getattr(groups[c], pick)() for c, pick in
             (("started_at", "min"), ("finished_at", "max")) if c in rows.columns}
    for run in n_tasks.index:
        values = {c: [str(v) for v in lists[c][run] if not is_null(v)]
                  if c in lists else [] for c in ("candidate", "format", "harness_version")}
        out[str(run)] = {
            "n_tasks": int(n_tasks[run]),
            "candidate": values["candidate"],
            "format": values["format"],
            "harness_version": values["harness_version"][0] if values["harness_version"]
            else None,
            **{c: None if c not in times or is_null(times[c][run])
               else times[c][run].to_pydatetime() for c in ("started_at", "finished_at")},
        }
    return out


def _fill_kinds(frame: Any) -> Any:
    """A reward key one selected run lacks: NA with ``_kind_`` ``missing`` in its rows
    (as :func:`metrickit.concat_trials` stacks tables), not a null kind."""
    kinds = [c for c in frame.columns if c.startswith("_kind_")]
    if not kinds:
        return frame
    if type(frame).__module__.startswith("polars"):
        import polars as pl

        return frame.with_columns([pl.col(c).fill_null("missing") for c in kinds])
    out = frame.copy()
    for c in kinds:
        out[c] = out[c].fillna("missing")
    return out


def _insert_candidate(frame: Any) -> Any:
    """A ``candidate`` column where the trial table has it (after ``run``), to be filled."""
    if "candidate" in frame.columns:
        return frame
    if type(frame).__module__.startswith("polars"):
        import polars as pl

        cols = list(frame.columns)
        at = cols.index("run") + 1 if "run" in cols else 0
        out = frame.with_columns(pl.lit(None, dtype=pl.String).alias("candidate"))
        return out.select([*cols[:at], "candidate", *cols[at:]])
    out = frame.copy()
    at = list(out.columns).index("run") + 1 if "run" in out.columns else 0
    out.insert(at, "candidate", None)
    out["candidate"] = out["candidate"].astype("string")
    return out


def _select_candidates(frame: Any, wanted: list[str]) -> Any:
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=True)
    have = list(dict.fromkeys(nf.get_column("candidate").to_list()))
    unknown = [w for w in wanted if w not in have]
    if unknown:
        raise StoreError(f"no candidate {unknown[0]!r} in the selected runs; candidates are {have}")
    return nf.filter(nw.col("candidate").is_in(wanted)).to_native()
