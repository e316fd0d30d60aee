"""A real lm-evaluation-harness run, offline: two tiny local tasks (one multiple choice with
acc/acc_norm, one generation with exact_match under two filters) on lm-eval's ``dummy``
model, with ``--log_samples``. ``dataset_path: json`` with local ``data_files`` needs no
download. Run as a script to write the output to a folder:
``python tests/io/lm_eval_fixture.py /tmp/lm_eval``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

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


#: (group, model_args) -> the output folder of the first run with them in this process
_RUNS: dict[tuple[bool, str], Path] = {}


def run_lm_eval(root: Path, *, group: bool = False,
                model_args: str = "pretrained=tiny/dummy-lm") -> Path:
    """Run lm_eval in ``root``; the ``--output_path`` folder it wrote. ``group``: run the
    two tasks as the group ``tiny_suite`` (versioned tasks and group).

    lm_eval takes 10-20 s (mostly its imports), so it runs once per test session for each
    ``(group, model_args)``: a later call gets a copy of that run's whole folder (docs,
    task files, output) in its own ``root``, so each caller may change its copy. The
    output's own records of where the docs were still name the first run's folder, which
    lives as long as the session.
    """
    key = (group, model_args)
    if key in _RUNS and _RUNS[key].is_dir():
        first = _RUNS[key].parent
        root.mkdir(parents=True, exist_ok=True)
        for entry in first.iterdir():
            if entry.is_dir():
                shutil.copytree(entry, root / entry.name)
            else:
                shutil.copy2(entry, root / entry.name)
        return root / "out"
    out = _run(root, group=group, model_args=model_args)
    _RUNS[key] = out
    return out


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
            sys.executable, "-m", "lm_eval", "--model", "dummy",
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


if __name__ == "__main__":
    print(run_lm_eval(Path(sys.argv[1])))
