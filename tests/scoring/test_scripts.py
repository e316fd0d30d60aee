"""Harbor metric scripts: run as Harbor runs them, every failure its own error."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from proc_helpers import wait_gone

import metrickit as mk
from metrickit.errors import MetricScriptExit, MetricScriptOutputError, MetricScriptTimeout
from metrickit.scoring.metric_scripts import frame_to_rows


def script(tmp_path, body, name="metric.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


HEADER = """
import argparse, json, sys
from pathlib import Path
p = argparse.ArgumentParser()
p.add_argument("-i", "--input-path", type=Path, required=True)
p.add_argument("-o", "--output-path", type=Path, required=True)
a = p.parse_args()
"""


def test_seed_example_runs_unchanged(data_dir):
    path = data_dir / "metric_scripts" / "harbor_example_metric.py"
    assert mk.run_metric_script(path, data_dir / "rewards" / "single_dim.jsonl") == {"mean": 0.25}
    with pytest.raises(MetricScriptExit, match="Expected exactly one key"):
        mk.run_metric_script(path, data_dir / "rewards" / "multi_dim.jsonl")


def test_jsonl_written_as_harbor_writes_it(tmp_path):
    echo = script(
        tmp_path,
        HEADER
        + """
lines = a.input_path.read_text().splitlines()
a.output_path.write_text(json.dumps({"n": len(lines), "null_line": int(lines[2] == "null"),
                                     "int_kept": int(lines[0] == '{"a": 1, "b": 0.5}')}))
""",
    )
    rows = [{"a": 1, "b": 0.5}, {"b": 1.0}, None, {}]
    assert frame_to_rows(mk.read_rewards(rows)) == rows
    result = mk.run_metric_script(echo, rows)
    assert result == {"n": 4, "null_line": 1, "int_kept": 1}


def test_by_group_runs_once_per_group(data_dir):
    df = mk.read_rewards(data_dir / "rewards" / "sample_3000.jsonl")
    df["agent"] = np.array(["a", "b"])[np.arange(len(df)) % 2]
    path = data_dir / "metric_scripts" / "strict_pass_rate.py"
    result = mk.run_metric_script(path, df, by="agent")
    assert set(result) == {"a", "b"}
    for agent in "ab":
        part = df[df["agent"] == agent]
        strict = (
            (part["_status"] == "ok")
            & (part["correctness"] == 1)
            & (part["style"] == 1)
            & (part["efficiency"] == 1)
            & (
                part[[mk.kind_column(k) for k in ("correctness", "style", "efficiency")]]
                != "missing"
            ).all(axis=1)
        )
        # the script counts rows whose present values are all 1
        rows = [r for r in frame_to_rows(part) if r and all(v == 1 for v in r.values())]
        assert result[agent]["strict_pass_rate"] == len(rows) / len(part)
        assert strict.sum() <= len(rows)


def test_failures_each_have_their_own_error(tmp_path):
    rows = [{"r": 1}]
    crash = script(tmp_path, HEADER + "print('boom here', file=sys.stderr); sys.exit(3)\n", "c.py")
    with pytest.raises(MetricScriptExit, match=r"exited with status 3(.|\n)*boom here"):
        mk.run_metric_script(crash, rows)
    silent = script(tmp_path, HEADER + "pass\n", "s.py")
    with pytest.raises(MetricScriptOutputError, match=r"wrote no output file.*ignore -o"):
        mk.run_metric_script(silent, rows)
    notjson = script(tmp_path, HEADER + "a.output_path.write_text('mean: 1')\n", "n.py")
    with pytest.raises(MetricScriptOutputError, match="not JSON"):
        mk.run_metric_script(notjson, rows)
    notobj = script(tmp_path, HEADER + "a.output_path.write_text('[1, 2]')\n", "l.py")
    with pytest.raises(MetricScriptOutputError, match=r"wrote list.*expected a JSON object"):
        mk.run_metric_script(notobj, rows)
    notnum = script(tmp_path, HEADER + 'a.output_path.write_text(\'{"mean": "high"}\')\n', "v.py")
    with pytest.raises(MetricScriptOutputError, match=r"'mean': 'high' \(str\)"):
        mk.run_metric_script(notnum, rows)


def test_timeout_kills_and_says_so(tmp_path):
    hang = script(
        tmp_path,
        HEADER + "import time\nprint('started', file=sys.stderr, flush=True)\ntime.sleep(60)\n",
        "h.py",
    )
    with pytest.raises(MetricScriptTimeout, match=r"past its 1 s timeout and was killed"):
        mk.run_metric_script(hang, [{"r": 1}], timeout=1)
    with pytest.raises(mk.MetricError, match="600 s maximum"):
        mk.run_metric_script(hang, [{"r": 1}], timeout=601)


@pytest.mark.parametrize(
    ("args", "in_process"),
    [
        (["--kind", "mean"], lambda df: mk.aggregate(df, "mean")),
        (["--kind", "max"], lambda df: mk.aggregate(df, "max")),
        (["--kind", "pass_rate", "--threshold", "0.5"], lambda df: {"m": mk.pass_rate(0.5)(df)}),
        (
            ["--kind", "weighted", "--weights", "correctness=0.7,style=0.3"],
            lambda df: {"m": mk.weighted({"correctness": 0.7, "style": 0.3})(df)},
        ),
        (
            ["--kind", "quantile", "--q", "0.9", "--key", "style"],
            lambda df: {"m": mk.quantile(0.9, key="style")(df)},
        ),
    ],
)
def test_new_metric_round_trip(tmp_path, data_dir, args, in_process):
    out = tmp_path / "metric.py"
    proc = subprocess.run(
        [sys.executable, "-m", "metrickit.cli", "new-metric", "m", "-o", str(out), *args],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("# /// script")
    df = mk.read_rewards(data_dir / "rewards" / "sample_3000.jsonl")
    got = mk.run_metric_script(out, df, python=sys.executable)
    expected = in_process(df)
    assert set(got) == set(expected)
    for key in expected:
        # Harbor's own aggregates are bit-identical; the others agree to rounding
        assert got[key] == pytest.approx(expected[key], rel=1e-12, abs=0)
        if args[1] in ("mean", "max"):
            assert json.dumps(got[key]) == json.dumps(expected[key])


def user_metric(rewards):
    good = sum(1 for r in rewards if r and r.get("correctness", 0) > 0.5)
    return {"good": good / len(rewards)}


def test_new_metric_from_a_user_function(tmp_path, data_dir):
    out = mk.write_metric_script(tmp_path / "metric.py", kind="function", function=user_metric)
    df = mk.read_rewards(data_dir / "rewards" / "sample_3000.jsonl")
    got = mk.run_metric_script(out, df, python=sys.executable)
    assert got == user_metric(frame_to_rows(df))


def test_script_metric_beside_builtins(data_dir):
    df = mk.read_rewards(data_dir / "rewards" / "single_dim.jsonl")
    script_path = data_dir / "metric_scripts" / "harbor_example_metric.py"
    cmp = mk.compare_metrics(df, {"harbor": "mean", "script": mk.script_metric(script_path)})
    values = cmp.table.set_index("metric")["value"]
    assert values["harbor"] == values["script"] == 0.25
    assert cmp.table.set_index("metric").loc["script", "ci_method"] == "none"


def test_pep723_script_runs_with_uv_like_harbor(tmp_path):
    from metrickit.scoring.metric_scripts import find_uv

    assert find_uv() is not None, "uv is a dev dependency; pip install -e '.[dev]'"
    pep723 = script(
        tmp_path,
        """# /// script
# dependencies = []
# ///
import json, os, sys
from pathlib import Path
out = Path(sys.argv[sys.argv.index("-o") + 1])
out.write_text(json.dumps({"under_uv": int("UV" in os.environ)}))
""",
        "uv_metric.py",
    )
    assert mk.run_metric_script(pep723, [{"r": 1}]) == {"under_uv": 1}
    # without a PEP 723 block (or with python= given) it runs on this interpreter
    assert mk.run_metric_script(pep723, [{"r": 1}], python=sys.executable) == {"under_uv": 0}


def test_generated_sum_script_follows_cpythons_int_overflow_rule(tmp_path):
    # 1,024 ints of 2**53 push CPython's C-long int sum past 2**63: the floats after them
    # are then added without compensation (Python 3.12 gives 0.0 here, not 1.0).
    import json
    import subprocess
    import sys

    rows = (
        [{"a": 2**53}] * 1024 + [{"a": -(2**53)}] * 1024 + [{"a": 1e16}, {"a": 1.0}, {"a": -1e16}]
    )
    rewards = tmp_path / "r.jsonl"
    rewards.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    script = mk.write_metric_script(tmp_path / "sum.py", kind="sum")
    out = tmp_path / "o.json"
    subprocess.run([sys.executable, str(script), "-i", str(rewards), "-o", str(out)], check=True)
    assert json.loads(out.read_text()) == {"sum": 0.0} == mk.aggregate(rewards, "sum")


# ---------------------------------------------------------------------------
# A script that leaves a process behind; a script that writes megabytes
# ---------------------------------------------------------------------------


def _leaves_a_sleeper(tmp_path, own_session):
    pidfile = tmp_path / "pid"
    body = HEADER + textwrap.dedent(f"""
        import os, subprocess
        code = ("import os, time; open({str(pidfile)!r} + '.tmp', 'w').write(str(os.getpid())); "
                "os.replace({str(pidfile)!r} + '.tmp', {str(pidfile)!r}); time.sleep(60)")
        subprocess.Popen([sys.executable, "-c", code], start_new_session={own_session})
        while not os.path.exists({str(pidfile)!r}):
            pass
        a.output_path.write_text('{{"mean": 0.5}}')
    """)
    return script(tmp_path, body, "leaves.py"), pidfile


@pytest.mark.parametrize("own_session", [False, True])
def test_returns_when_the_script_exits_not_when_its_pipes_close(tmp_path, own_session):
    # The background process held stdout and stderr: in the script's group the call used
    # to raise a false MetricScriptTimeout; in its own session it overran the timeout (60 s).
    import os
    import signal
    import time

    path, pidfile = _leaves_a_sleeper(tmp_path, own_session)
    start = time.monotonic()
    try:
        assert mk.run_metric_script(path, [{"r": 1}], timeout=3,
                                    python=sys.executable) == {"mean": 0.5}
        assert time.monotonic() - start < 15  # generous: the timeout is 3 s, the sleep 60 s
        pid = int(pidfile.read_text())
        if not own_session:
            assert wait_gone(pid)  # what the script left in its group is killed
    finally:
        if own_session and pidfile.exists():  # out of reach of the library: the test ends it
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_script_output_is_read_in_bounded_memory(tmp_path):
    # 100 MB on stdout and on stderr without a newline: communicate() held both whole.
    path = script(tmp_path, """
        import sys
        sys.stdout.write("o" * 100_000_000)
        sys.stderr.write("e" * 100_000_000 + "the end")
        sys.exit(2)
    """, "loud.py")
    probe = textwrap.dedent(f'''
        import resource, metrickit as mk
        from metrickit.errors import MetricScriptExit
        rows = [{{"r": 1}}]
        mk.run_metric_script({str(path)!r}.replace("loud", "quiet"), rows)  # imports, warm
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            mk.run_metric_script({str(path)!r}, rows, timeout=60)
        except MetricScriptExit as exc:
            print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
            print(exc.stderr_tail)
    ''')
    script(tmp_path, HEADER + "a.output_path.write_text('{\"m\": 1}')\n", "quiet.py")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    growth_mb, tail = proc.stdout.split("\n", 1)
    assert int(growth_mb) < 40, growth_mb  # was ~250 MB
    assert tail.strip() == "e" * 1993 + "the end"


# ---------------------------------------------------------------------------
# new-metric: every argument checked, names written as literals, nothing overwritten
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kind", "pass_rate", "--threshold", "nan"], "threshold=nan; expected a finite"),
        (["--kind", "pass_rate", "--threshold", "inf"], "threshold=inf; expected a finite"),
        (["--kind", "weighted", "--weights", "a=inf"], "weights['a']=inf; expected a finite"),
        (["--kind", "weighted", "--weights", "a=nan,b=1"], "weights['a']=nan"),
        (["--kind", "weighted", "--weights", "a=1,b=-1"], "must be >= 0 and not all 0"),
        (["--kind", "weighted", "--weights", "a=0,b=0"], "must be >= 0 and not all 0"),
        (["--kind", "weighted", "--weights", "a=1e308,b=1e308"], "sum to a finite number"),
        (["--kind", "weighted", "--weights", "a=1,a=2"], "--weights names 'a' twice"),
        (["--kind", "weighted", "--weights", "a"], "--weights item 'a' is not KEY=NUMBER"),
        (["--kind", "quantile", "--q", "2"], "quantile q=2.0; expected 0 <= q <= 1"),
        (["--kind", "quantile", "--q", "-0.5"], "quantile q=-0.5; expected 0 <= q <= 1"),
        (["--kind", "quantile", "--q", "nan"], "q=nan; expected a finite number"),
    ],
)
def test_new_metric_refuses_bad_arguments_and_writes_nothing(tmp_path, capsys, args, message):
    # Each used to write a script (exit 0) that raised NameError, ZeroDivisionError or
    # IndexError when Harbor ran it, or (q=-0.5) returned a made-up value.
    from metrickit import cli

    out = tmp_path / "metric.py"
    assert cli.main(["new-metric", "m", "-o", str(out), *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("metrickit new-metric: error: ") and message in err, err
    assert not out.exists()


NAMES = ['x"""\nopen("PWNED", "w")\n"""', "it's \\ {braces} \"q\"", "line\nbreak\ttab",
         "ünï — 名前", "", "'''"]


@pytest.mark.parametrize("kind", ["mean", "pass_rate", "weighted", "quantile"])
def test_new_metric_names_are_string_literals_not_code(tmp_path, kind):
    # A name holding \"\"\" ended the generated docstring: the rest ran as code.
    rows = [{"a": 1}, None, {"a": 0}]
    for i, name in enumerate(NAMES):
        out = tmp_path / f"m{i}.py"
        extra = {"weights": {name: 1.0}} if kind == "weighted" else {}
        mk.write_metric_script(out, kind=kind, name=name, keys=["a"] if kind == "pass_rate"
                               else (), **extra)
        compile(out.read_text(encoding="utf-8"), str(out), "exec")
        if kind == "weighted":
            rows = [{name: 1}, None, {name: 0.5}]
        got = mk.run_metric_script(out, rows, python=sys.executable)
        assert list(got) == ([kind] if kind == "mean" else [name or kind]), (name, got)
        assert not list(tmp_path.glob("**/PWNED"))


def test_new_metric_refuses_to_overwrite_without_force(tmp_path, capsys):
    from metrickit import cli

    out = tmp_path / "metric.py"
    out.write_text("my own script\n")
    assert cli.main(["new-metric", "m", "-o", str(out), "--kind", "sum"]) == 1
    assert "exists; not overwritten (pass --force" in capsys.readouterr().err
    assert out.read_text() == "my own script\n"
    assert cli.main(["new-metric", "m", "-o", str(out), "--kind", "sum", "--force"]) == 0
    assert out.read_text().startswith("# /// script")
    with pytest.raises(mk.MetricError, match="exists; not overwritten"):
        mk.write_metric_script(out, kind="sum", overwrite=False)


def test_write_metric_script_checks_types_as_the_metrics_do(tmp_path):
    out = tmp_path / "metric.py"
    bad = [
        ({"kind": "pass_rate", "threshold": True}, "threshold=True (bool); expected a finite"),
        ({"kind": "pass_rate", "threshold": "1"}, "threshold='1' (str)"),
        ({"kind": "pass_rate", "keys": "abc"}, "keys='abc' is one string"),
        ({"kind": "pass_rate", "keys": [1]}, "keys item=1 (int); expected a string"),
        ({"kind": "weighted", "weights": {1: 1.0}}, "weights key=1 (int)"),
        ({"kind": "quantile", "q": 10**400}, "too large for a float"),
        ({"kind": "quantile", "key": 3}, "key=3 (int); expected a string"),
        ({"kind": "mean", "name": 3}, "name=3 (int); expected a string"),
        ({"kind": "function", "function": lambda rows: {}}, "not a lambda"),
    ]
    for kwargs, message in bad:
        with pytest.raises(mk.MetricError) as info:
            mk.write_metric_script(out, **kwargs)
        assert message in str(info.value), (kwargs, str(info.value))
        assert not out.exists()
    # numpy scalars are numbers
    mk.write_metric_script(out, kind="quantile", q=np.float64(0.25))
    assert mk.run_metric_script(out, [{"a": 0}, {"a": 4}], python=sys.executable) == {
        "quantile": 1.0}


# ---------------------------------------------------------------------------
# new-metric --kind function: the signature stated, the function tried before writing
# ---------------------------------------------------------------------------

FUNCTIONS = '''
import math
import statistics


def good(rewards):
    ok = [r for r in rewards if r and r.get("correctness", 0) >= 1]
    return {"solved": len(ok) / len(rewards), "n": len(rewards)}


def bare_float(rewards):
    return 0.5


def int_keys(rewards):
    return {1: 0.5}


def not_finite(rewards):
    return {"m": float("nan")}


def infinite(rewards):
    return {"m": math.inf}


def string_value(rewards):
    return {"m": "0.5"}


def boolean_value(rewards):
    return {"m": True}


def a_list(rewards):
    return [0.5]


def empty(rewards):
    return {}


def crashes_on_none(rewards):
    return {"m": sum(r["correctness"] for r in rewards) / len(rewards)}


def uses_a_module_import(rewards):
    return {"m": statistics.fmean(1.0 if r else 0.0 for r in rewards)}


def uses_numpy(rewards):
    import numpy as np

    return {"m": float(np.mean([1.0 if r else 0.0 for r in rewards]))}
'''


@pytest.fixture
def functions(tmp_path):
    path = tmp_path / "my_metrics.py"
    path.write_text(FUNCTIONS)
    return path


def test_new_metric_help_states_the_function_signature():
    from metrickit import cli
    from metrickit.scoring import metric_scripts

    signature = "compute(rewards: list[dict | None]) -> dict[str, float]"
    assert cli.FUNCTION_SIGNATURE == metric_scripts.FUNCTION_SIGNATURE == signature
    proc = subprocess.run([sys.executable, "-m", "metrickit.cli", "new-metric", "--help"],
                          capture_output=True, text=True, check=True)
    assert signature in " ".join(proc.stdout.split())  # argparse wraps the lines
    assert "bare number" in proc.stdout and "--sample" in proc.stdout


def test_new_metric_function_writes_the_signature_and_runs_like_harbor(tmp_path, functions,
                                                                       data_dir):
    from metrickit import cli

    out = tmp_path / "metric.py"
    assert cli.main(["new-metric", "solved", "-o", str(out), "--kind", "function",
                     "--from", f"{functions}:good"]) == 0
    text = out.read_text()
    assert "# compute(rewards: list[dict | None]) -> dict[str, float]" in text
    assert "compute = good" in text
    rows = [json.loads(x) for x in (data_dir / "rewards" / "multi_dim.jsonl").read_text()
            .splitlines()]
    expected = {"solved": sum(1 for r in rows if r and r.get("correctness", 0) >= 1) / len(rows),
                "n": len(rows)}
    assert mk.run_metric_script(out, data_dir / "rewards" / "multi_dim.jsonl",
                                python=sys.executable) == expected


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("bare_float", "returned the bare number 0.5; return a dict of named numbers"),
        ("int_keys", "key 1 is a int; metric names must be strings"),
        ("not_finite", "'m': nan is not finite"),
        ("infinite", "'m': inf is not finite"),
        ("string_value", "'m': '0.5' is a str; expected a number"),
        ("boolean_value", "'m': True is a bool; expected a number"),
        ("a_list", "returned list [0.5]; expected a dict of named numbers"),
        ("empty", "returned an empty dict"),
        ("crashes_on_none", "raised KeyError: 'correctness' on the sample rows"),
        ("uses_a_module_import", "NameError: name 'statistics' is not defined"),
        ("uses_numpy", "No module named 'numpy'"),
    ],
)
def test_new_metric_function_refuses_what_harbor_would_reject(tmp_path, capsys, functions,
                                                              function, message):
    from metrickit import cli

    out = tmp_path / "metric.py"
    assert cli.main(["new-metric", "m", "-o", str(out), "--kind", "function",
                     "--from", f"{functions}:{function}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("metrickit new-metric: error: ") and message in err, err
    if function not in ("uses_a_module_import", "uses_numpy"):  # fail in this process
        assert "compute(rewards: list[dict | None]) -> dict[str, float]" in err or (
            "raised" in err and "--sample" in err), err
    assert not out.exists()


def test_new_metric_function_sample_rows(tmp_path, capsys, functions):
    from metrickit import cli

    # fails on the default rows (a None row), passes on rows that have every key
    sample = tmp_path / "rows.jsonl"
    sample.write_text('{"correctness": 1}\n{"correctness": 0}\n\n{"correctness": true}\n')
    out = tmp_path / "metric.py"
    assert cli.main(["new-metric", "m", "-o", str(out), "--kind", "function",
                     "--from", f"{functions}:crashes_on_none"]) == 1
    assert "--sample" in capsys.readouterr().err
    assert cli.main(["new-metric", "m", "-o", str(out), "--kind", "function",
                     "--from", f"{functions}:crashes_on_none", "--sample", str(sample)]) == 0
    assert mk.run_metric_script(out, sample, python=sys.executable) == {"m": 2 / 3}
    with pytest.raises(mk.MetricError, match="expected at least one reward row"):
        mk.write_metric_script(tmp_path / "x.py", kind="function", function=user_metric,
                               sample=[1, 2])
    with pytest.raises(mk.MetricError, match="cannot read it as reward JSONL"):
        mk.write_metric_script(tmp_path / "x.py", kind="function", function=user_metric,
                               sample=tmp_path / "missing.jsonl")
    assert not (tmp_path / "x.py").exists()
