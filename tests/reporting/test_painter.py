"""The report's drawing process (metrickit.reporting.painter): where it forks, that a
drawing done there is the one done here, and that its failures are redone and said.

The fork happens only in a process without other threads, which this one (numpy imported,
an xdist worker) need not be: each test runs a fresh interpreter."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from metrickit.reporting.painter import NO_FORK

LINUX_2_CORES = sys.platform.startswith("linux") and (os.cpu_count() or 1) >= 2
needs_fork = pytest.mark.skipif(not LINUX_2_CORES,
                                reason="the drawing process forks only on Linux with 2+ cores")


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != NO_FORK} | env
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=environ, timeout=120, check=False)


MECHANISM = """
    import json, os, threading, time, warnings
    from metrickit.reporting.painter import can_fork, later, painting

    out = {"alone": can_fork()}
    with painting() as forked, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pid = later(os.getpid)
        local = lambda: 41 + 1  # cannot be pickled: the child cannot run it
        answer = later(local)
        out.update(forked=forked, pid=pid(), again=pid(), answer=answer(),
                   warned=[str(w.message) for w in caught])
    out["me"] = os.getpid()
    # nothing of the pool outlives it: in Python 3.11 a pool thread still ending at the
    # interpreter's exit can write to its closed pipe (an OSError printed at exit)
    out["threads_after"] = [t.name for t in threading.enumerate()
                            if t is not threading.main_thread()]
    try:
        os.kill(out["pid"], 0)
        out["child_after"] = "running"
    except ProcessLookupError:
        out["child_after"] = "gone"
    t = threading.Thread(target=time.sleep, args=(0.5,))
    t.start()
    out["threaded"] = can_fork()
    t.join()
    print(json.dumps(out))
"""


@needs_fork
def test_a_drawing_runs_in_the_forked_process_and_a_failure_there_is_redone_and_said():
    run = _python(MECHANISM)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["alone"] and out["forked"]
    assert out["pid"] != out["me"] and out["again"] == out["pid"]  # awaited once
    assert out["answer"] == 42  # redone here
    assert len(out["warned"]) == 1
    assert re.search(r"drawing process failed on '<lambda>' \(.*pickle.*\); it was drawn "
                     r"in this process instead", out["warned"][0]), out["warned"]
    assert out["threaded"] is False  # another thread: no fork
    assert out["threads_after"] == [] and out["child_after"] == "gone"
    assert run.stderr == ""


def test_no_fork_is_honoured_and_draws_here():
    run = _python(MECHANISM, **{NO_FORK: "1"})
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert not out["alone"] and not out["forked"]
    assert out["pid"] == out["me"] and out["answer"] == 42 and out["warned"] == []


_STAMPS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|<tr><td class=\"name\">(command|process)"
                     r"</td>.*?</tr>")


@needs_fork
def test_an_error_ends_the_drawing_process_at_once():
    """An error in the report (a source that cannot be read, Ctrl-C) leaves nothing drawing:
    the child, in the middle of a 30 s call, ends when the error leaves ``painting``."""
    run = _python("""
        import os, time
        from metrickit.reporting.painter import later, painting

        try:
            with painting():
                pid = later(os.getpid)()
                later(time.sleep, 30)
                raise RuntimeError("a source that cannot be read")
        except RuntimeError:
            pass
        start = time.monotonic()
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:  # reaped already
            pass
        print(time.monotonic() - start)
    """)
    assert run.returncode == 0, run.stderr
    assert float(run.stdout.split()[-1]) < 10


@needs_fork
def test_the_report_drawn_in_a_second_process_is_the_report_drawn_here(demo_report, tmp_path):
    """`make demo`'s report as the command writes it (forked; the parent never imports
    matplotlib) against the same report written in pytest's process (no fork): the same
    page, images byte for byte."""
    out = tmp_path / "report.html"
    argv = [*demo_report.argv]
    argv[argv.index("-o") + 1] = str(out)
    run = _python(f"""
        import json, sys
        from metrickit.cli import main
        code = main({argv!r})
        print(json.dumps([code, sorted(m for m in sys.modules if m.startswith("matplotlib"))]))
    """)
    assert run.returncode == 0, run.stderr
    code, imported = json.loads(run.stdout.splitlines()[-1])
    assert code == 0 and imported == []
    assert "drawing process failed" not in run.stderr
    forked = _STAMPS.sub("", out.read_text(encoding="utf-8"))
    here = _STAMPS.sub("", Path(demo_report.path).read_text(encoding="utf-8"))
    assert forked == here
    assert forked.count("data:image/png;base64,") == 2
