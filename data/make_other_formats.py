"""Example output of the other evaluation frameworks metrickit reads, written by the real
tools where they run offline (``mk.examples.path("inspect_logs")``, ``"lm_eval_output"``,
``"terminal_bench_run"``):

- ``other_formats/inspect_logs/``: Inspect AI ``.eval`` logs of a four-sample task run for
  three epochs on two ``mockllm`` models, with a dict-valued and a bool scorer, a sample
  error and a token limit (Inspect's own ``eval``; needs ``inspect-ai``);
- ``other_formats/lm_eval_output/``: ``lm_eval --log_samples`` output of two tiny local
  tasks on lm-eval's ``dummy`` model (needs ``lm-eval``);
- ``other_formats/terminal_bench_run/``: a Terminal-Bench 1 run folder with the harness's
  field names and layout (Terminal-Bench itself needs Python >= 3.12, so the folder is
  written from its models' fields).

The generators are the ones the readers' tests use (``tests/io/*_fixture.py``).

    python data/make_other_formats.py [OUT_DIR]      # default: data/other_formats
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "tests" / "io"


def main(out: Path) -> None:
    sys.path.insert(0, str(FIXTURES))
    from lm_eval_fixture import run_lm_eval
    from tb1_fixture import write_run

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        # Inspect's event loop runs in its own process (as in the tests)
        subprocess.run([sys.executable, str(FIXTURES / "inspect_fixture.py"), tmp], check=True,
                       capture_output=True, timeout=600)
        shutil.copytree(Path(tmp) / "eval", out / "inspect_logs")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(run_lm_eval(Path(tmp)), out / "lm_eval_output")
    with tempfile.TemporaryDirectory() as tmp:
        run, _ = write_run(Path(tmp))
        shutil.copytree(run, out / "terminal_bench_run" / run.name)
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        print(path.relative_to(out), path.stat().st_size)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "other_formats")
