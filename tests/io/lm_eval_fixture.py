"""A real lm-evaluation-harness run, offline: two tiny local tasks (one multiple choice with
acc/acc_norm, one generation with exact_match under two filters) on lm-eval's ``dummy``
model, with ``--log_samples``. ``dataset_path: json`` with local ``data_files`` needs no
download. Run as a script to write the output to a folder:
``python tests/io/lm_eval_fixture.py /tmp/lm_eval``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

DOCS = [
    {"question": "2+2", "choices": ["3", "4"], "label": 1, "answer": "4"},
    {"question": "3+3", "choices": ["6", "7"], "label": 0, "answer": "6"},
    {"question": "say lol", "choices": ["lol", "no"], "label": 0, "answer": "lol"},
    {"question": "1+1", "choices": ["2", "5"], "label": 0, "answer": "2"},
]

MC = """task: tiny_mc
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}} ="
doc_to_choice: "{{{{choices}}}}"
doc_to_target: label
metric_list:
  - metric: acc
  - metric: acc_norm
"""

GEN = """task: tiny_gen
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}} ="
doc_to_target: answer
generation_kwargs:
  until: ["\\n"]
filter_list:
  - name: strict
    filter:
      - function: take_first
  - name: loose
    filter:
      - function: regex
        regex_pattern: "(\\\\w+)"
      - function: take_first
metric_list:
  - metric: exact_match
"""



# ``group=True``: both tasks versioned and run as one lm-eval group, so the results file
# records ``group_subtasks`` ({"tiny_suite": ["tiny_mc", "tiny_gen"]}) and ``versions``
GROUP = """group: tiny_suite
task:
  - tiny_mc
  - tiny_gen
aggregate_metric_list:
  - metric: acc
    weight_by_size: true
metadata:
  version: 1.0
"""
TASK_VERSION = "metadata:\n  version: 2.0\n"


def run_lm_eval(root: Path, *, group: bool = False,
                model_args: str = "pretrained=tiny/dummy-lm", once: Any = None) -> Path:
    """Run lm_eval in ``root``; the ``--output_path`` folder it wrote. ``group``: run the
    two tasks as the group ``tiny_suite`` (versioned tasks and group).

    lm_eval takes 10-20 s (mostly its imports). With ``once`` (the ``shared_tmp`` fixture
    of tests/conftest.py) it runs once per test session for each ``(group, model_args)``,
    whichever xdist worker asks first: every call gets a copy of that run's whole folder
    (docs, task files, output) in its own ``root``, so each caller may change its copy.
    The output's own records of where the docs were name the first run's folder, which
    lives as long as the session.
    """
    if once is None:
        return _run(root, group=group, model_args=model_args)
    digest = hashlib.blake2b(f"{group}|{model_args}".encode(), digest_size=6).hexdigest()
    first = once(f"lm_eval-{digest}", lambda folder: _run(folder, group=group,
                                                          model_args=model_args))
    root.mkdir(parents=True, exist_ok=True)
    for entry in first.iterdir():
        if entry.is_dir():
            shutil.copytree(entry, root / entry.name)
        elif entry.name != ".made":
            shutil.copy2(entry, root / entry.name)
    return root / "out"


def _run(root: Path, *, group: bool, model_args: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    data = root / "docs.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    tasks = root / "tasks"
    tasks.mkdir()
    version = TASK_VERSION if group else ""
    (tasks / "tiny_mc.yaml").write_text(MC.format(data=data) + version)
    (tasks / "tiny_gen.yaml").write_text(GEN.format(data=data) + version)
    if group:
        (tasks / "tiny_suite.yaml").write_text(GROUP)
    env = {
        **os.environ,
        "HF_HOME": str(root / "hf"),
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
    }
    done = subprocess.run(
        [
            sys.executable, str(Path(__file__).resolve()), "--lm-eval", "--model", "dummy",
            "--model_args", model_args,
            "--tasks", "tiny_suite" if group else "tiny_mc,tiny_gen",
            "--include_path", str(tasks),
            "--output_path", str(root / "out"), "--log_samples",
        ],
        capture_output=True, text=True, timeout=300, env=env, cwd=root,
    )
    if done.returncode != 0:
        raise RuntimeError(f"lm_eval failed:\n{done.stderr[-3000:]}")
    return root / "out"


def _lm_eval_cli(argv: list[str]) -> None:
    """``lm_eval ARGV`` as its console script runs it, with a task index of the
    ``--include_path`` tasks alone: lm_eval would otherwise index its ~15,000 built-in task
    files (10-13 s of a run's 15-18 s) to look up two names it does not have. Loading, the
    dummy model, filters, metrics and the results and samples files are lm_eval's own code.
    """
    from lm_eval import tasks
    from lm_eval.__main__ import cli_evaluate

    index_all = tasks.TaskManager.__init__

    def own_tasks_only(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["include_defaults"] = False
        index_all(self, *args, **kwargs)

    tasks.TaskManager.__init__ = own_tasks_only  # type: ignore[method-assign]
    sys.argv = ["lm_eval", *argv]
    cli_evaluate()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--lm-eval"]:
        _lm_eval_cli(sys.argv[2:])
    else:
        print(run_lm_eval(Path(sys.argv[1])))
