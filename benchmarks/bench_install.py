"""What installing metrickit costs: the wheel, and the venv `make demo` creates, against the
lean install's goals (a wheel of at most 1 MB and 500 files; a demo venv of at most 400 MB,
with no dev or browser tool in it).

    python benchmarks/bench_install.py            # the wheel, then make demo in a fresh clone
    python benchmarks/bench_install.py --quick    # the wheel only

The demo venv is measured as a user meets it: ``git clone`` of this repository's committed
``HEAD`` into a temporary folder, then ``make demo`` there (which downloads the runtime
dependencies from the package index: 1-3 minutes), its size taken after the install and again
after the demo ran (the demo's commands write the bytecode of what they import). Sizes are
the bytes of the files (``os.lstat``, symlinks not followed), in MB of 10**6 bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

WHEEL_MB, WHEEL_FILES, VENV_MB = 1.0, 500, 400.0
#: Distributions of the dev, docs and browser extras that a demo venv must not hold.
TOOLS = ("pytest", "mypy", "ruff", "jupyterlab", "playwright", "dspy", "lm_eval", "mkdocs")


def _size_mb(folder: Path) -> float:
    total = 0
    for dirpath, _, files in os.walk(folder):
        for name in files:
            total += os.lstat(os.path.join(dirpath, name)).st_size
    return total / 1e6


def _run(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed in {cwd}:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def wheel(work: Path) -> dict[str, object]:
    seconds = _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q",
                    "-w", str(work)], ROOT)
    built = next(work.glob("metrickit-*.whl"))
    with zipfile.ZipFile(built) as archive:
        files = len(archive.namelist())
    mb = built.stat().st_size / 1e6
    return {"operation": f"the wheel ({built.name})", "value": mb, "unit": "MB",
            "goal": WHEEL_MB, "note": f"{files} files (goal at most {WHEEL_FILES}); built in "
            f"{seconds:.1f} s", "files": files, "ok": mb <= WHEEL_MB and files <= WHEEL_FILES}


def demo_venv(work: Path) -> dict[str, object]:
    clone = work / "clone"
    _run(["git", "clone", "--quiet", str(ROOT), str(clone)], work)
    python = os.environ.get("PYTHON", "python3")
    env_python = f"PYTHON={python}"
    install_s = _run(["make", env_python, ".venv/.installed-runtime"], clone)
    installed = _size_mb(clone / ".venv")
    site = next((clone / ".venv" / "lib").glob("python3.*/site-packages"))
    dists = sorted(p.name.split("-")[0].lower() for p in site.glob("*.dist-info"))
    tools = [d for d in dists if d in TOOLS]
    demo_s = _run(["make", env_python, "demo"], clone)
    after = _size_mb(clone / ".venv")
    return {"operation": "make demo's venv in a fresh clone (after the demo ran)",
            "value": after, "unit": "MB", "goal": VENV_MB,
            "note": f"{installed:.0f} MB after the install ({install_s:.0f} s), {len(dists)} "
            f"distributions, dev/browser tools: {', '.join(tools) or 'none'}; the demo "
            f"{demo_s:.0f} s", "ok": after <= VENV_MB and not tools}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the wheel only")
    parser.add_argument("--json", action="store_true", help="print JSON rows for run.py")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="metrickit-install-") as tmp:
        work = Path(tmp)
        rows.append(wheel(work))
        if not args.quick:
            rows.append(demo_venv(work))
    if args.json:
        for r in rows:
            print(json.dumps(r), flush=True)
        return
    print(f"{'what':<60} {'size':>10} {'goal':>10}  note")
    for r in rows:
        mark = "" if r["ok"] else "  (goal not met)"
        print(f"{r['operation']:<60} {r['value']:>7.2f} {r['unit']} {r['goal']:>7.1f} "
              f"{r['unit']}  {r['note']}{mark}")


if __name__ == "__main__":
    main()
