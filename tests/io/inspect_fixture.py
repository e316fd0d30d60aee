"""Real Inspect AI logs for the reader's tests, written by a tiny Inspect eval run offline.

``make_logs(folder)`` runs a four-sample task for three epochs on two ``mockllm`` models
(``mockllm/model`` and ``mockllm/other``), with

- a scorer ``graded`` returning a dict (``correct``: Inspect's C/P/I grades, ``f1``: a float)
  and a scorer ``exact`` returning a bool, both deterministic per (sample, epoch, model);
- a solver that raises for sample ``s3`` in epoch 2 (a sample error; ``fail_on_error=False``);
- a token limit that sample ``s4`` (a long input) always hits;
- model usage (tokens and cost) from a ``custom_outputs`` callable, so ``mockllm`` needs no
  tokenizer download.

It writes the ``.eval`` logs under ``folder/eval``, the same logs converted by Inspect's own
``write_eval_log`` under ``folder/json``, a log still running (status ``started``, its first
epoch only) and one that ended in ``error`` under ``folder/partial``. Run as a script to
write them to a folder: ``python tests/io/inspect_fixture.py /tmp/logs``.
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path
from typing import Any


def _h(*parts: Any) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode()) % 100


def make_logs(folder: Path) -> dict[str, Path]:
    from inspect_ai import Task, task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.log import EvalError, read_eval_log, write_eval_log
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import (
        CORRECT,
        INCORRECT,
        PARTIAL,
        Score,
        accuracy,
        mean,
        scorer,
    )
    from inspect_ai.solver import solver

    @scorer(metrics={"correct": [accuracy()], "f1": [mean()]})
    def graded() -> Any:
        async def score(state: Any, target: Any) -> Score:
            h = _h(state.sample_id, state.epoch, state.model)
            grade = CORRECT if h < 50 else (PARTIAL if h < 70 else INCORRECT)
            return Score(value={"correct": grade, "f1": round(h / 100, 2)})

        return score

    @scorer(metrics=[accuracy()])
    def exact() -> Any:
        async def score(state: Any, target: Any) -> Score:
            return Score(value=_h("x", state.sample_id, state.epoch, state.model) < 40)

        return score

    @solver
    def maybe_fail() -> Any:
        async def solve(state: Any, generate: Any) -> Any:
            if state.sample_id == "s3" and state.epoch == 2:
                raise RuntimeError("boom in s3 epoch 2")
            return await generate(state)

        return solve

    def outputs(input: Any, tools: Any, tool_choice: Any, config: Any) -> Any:
        out = ModelOutput.from_content(model="mock", content="a")
        n = len(str(input[-1].content))
        out.usage = ModelUsage(
            input_tokens=10 + n, output_tokens=5, total_tokens=15 + n, total_cost=0.001 * n
        )
        return out

    @task
    def tiny() -> Task:
        return Task(
            dataset=[
                Sample(id=f"s{i}", input=f"q{i}" * (60 if i == 4 else 1), target="a")
                for i in range(1, 5)
            ],
            solver=[maybe_fail()],
            scorer=[graded(), exact()],
            epochs=3,
            token_limit=100,
        )

    eval_dir = folder / "eval"
    logs = inspect_eval(
        tiny(),
        model=[
            get_model("mockllm/model", custom_outputs=outputs),
            get_model("mockllm/other", custom_outputs=outputs),
        ],
        log_dir=str(eval_dir),
        log_format="eval",
        display="none",
        fail_on_error=False,
    )
    assert all(log.status == "success" for log in logs), [log.status for log in logs]
    json_dir = folder / "json"
    json_dir.mkdir()
    partial = folder / "partial"
    partial.mkdir()
    for file in sorted(eval_dir.glob("*.eval")):
        log = read_eval_log(str(file))
        write_eval_log(log, str(json_dir / (file.stem + ".json")), format="json")
    first_file = sorted(eval_dir.glob("*.eval"))[0]
    first = read_eval_log(str(first_file))
    # Inspect's own file names (list_eval_logs lists only those): <start>_<task>_<id>
    stem = first_file.stem.rsplit("_", 1)[0]
    running = first.model_copy(deep=True)
    running.status = "started"
    running.results = None
    running.samples = [s for s in running.samples or [] if s.epoch == 1]
    write_eval_log(running, str(partial / f"{stem}_Running0000000000000000.eval"), format="eval")
    failed = first.model_copy(deep=True)
    failed.status = "error"
    failed.error = EvalError(
        message="RuntimeError('out of credit')", traceback="", traceback_ansi=""
    )
    failed.results = None
    failed.samples = [s for s in failed.samples or [] if s.epoch <= 2]
    write_eval_log(failed, str(partial / f"{stem}_Failed00000000000000000.json"), format="json")
    return {"eval": eval_dir, "json": json_dir, "partial": partial}


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    print(make_logs(out))
