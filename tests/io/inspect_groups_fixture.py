"""Real Inspect AI logs whose samples record groups, for the reader's ``task_group`` tests.

``make_logs(folder)`` runs two tiny tasks offline on ``mockllm/model``:

- ``leveled``: samples with metadata ``level`` and ``subject``, scored by a scorer whose
  metrics are ``grouped(accuracy(), "level")`` (so ``level`` is the group, not ``subject``);
- ``subjects``: samples with metadata ``subject`` (as MMLU's) and ``topic`` (a dict), a
  plain ``accuracy()`` metric.

Run as a script to write them: ``python tests/io/inspect_groups_fixture.py /tmp/logs``
(a child process: Inspect's event loop leaves streams for the garbage collector).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def make_logs(folder: Path) -> None:
    from inspect_ai import Task, task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, accuracy, grouped, scorer
    from inspect_ai.solver import generate

    @scorer(metrics=[grouped(accuracy(), "level")])
    def by_level() -> Any:
        async def score(state: Any, target: Any) -> Score:
            return Score(value=int(str(state.sample_id)[-1]) % 2)

        return score

    @scorer(metrics=[accuracy()])
    def plain() -> Any:
        async def score(state: Any, target: Any) -> Score:
            return Score(value=1)

        return score

    @task
    def leveled() -> Task:
        return Task(
            dataset=[
                Sample(id=f"q{i}", input="x", target="a",
                       metadata={"level": f"L{i % 3}", "subject": f"subj{i % 2}"})
                for i in range(6)
            ],
            solver=[generate()],
            scorer=by_level(),
        )

    @task
    def subjects() -> Task:
        return Task(
            dataset=[
                Sample(id=f"m{i}", input="x", target="a",
                       metadata={"subject": ["algebra", "physics"][i % 2], "topic": {"x": i}})
                for i in range(4)
            ],
            solver=[generate()],
            scorer=plain(),
        )

    def outputs(input: Any, tools: Any, tool_choice: Any, config: Any) -> Any:
        # usage given, so mockllm needs no tokenizer download
        out = ModelOutput.from_content(model="mock", content="a")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    model = get_model("mockllm/model", custom_outputs=outputs)
    for name, made in (("leveled", leveled()), ("subjects", subjects())):
        logs = inspect_eval(made, model=model, log_dir=str(folder / name),
                            log_format="eval", display="none")
        assert all(log.status == "success" for log in logs), [log.status for log in logs]


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    make_logs(out)
