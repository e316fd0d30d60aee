"""Run a scorer file in a separate Python process, one case at a time.

Parent and child talk in JSON lines. The child's own stdout is the channel, and the scorer's
prints (Python and C level) go to stderr, so they cannot corrupt it.

parent → child: ``{"path": ...}``, then one case per line as ``{"pickle": base64}`` (the
case's own objects, as :func:`metrickit.score_cases` passes them: int keys, tuples, sets,
datetimes, ``Decimal``, ``pd.NA`` arrive as themselves), and the answers to ``llm``
requests. Only the parent's data is unpickled; what the child sends back is JSON.
child → parent: ``{"type": "ready", "arity", "problems"}``, then
``{"type": "result", ...}`` per case (see :func:`metrickit.scoring.scorers.call_scorer`), and
``{"type": "llm", "prompt", "kwargs"}`` whenever the scorer asks the judge, which the parent
answers with its own judge (:func:`metrickit.set_judge`), so API clients and closures work.

The parent enforces the timeout by killing the child; a child that dies or hangs is replaced
by a fresh one for the next case.
"""

from __future__ import annotations

import base64
import codecs
import collections
import contextlib
import json
import os
import pickle
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from metrickit._core.proc import READ_CHUNK, READER_GRACE, end_group, join_readers
from metrickit.scoring.contract import CASE_FIELDS

__all__ = ["check_path"]

_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)
_EOF = object()
# faulthandler's thread and module listings: long, and the scorer's line is reported apart.
_CRASH_NOISE = ("File ", "Current thread", "Thread 0x", "Extension modules", "<no Python frame>",
                "Stack (most recent call first)")
# A scorer that prints megabytes on one line must not put megabytes into the report
# (nor into memory: stderr is read in chunks and only this much of each line is kept).
_STDERR_LINE_LIMIT = 500
# Starting Python and importing metrickit is not the scorer's time.
_STARTUP_TIMEOUT = 120.0


def _jsonable(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, default=_jsonable)




def _encode_case(payload: dict[str, Any]) -> dict[str, str] | str:
    """The case as the child receives it, or why it cannot be sent (naming the field)."""
    try:
        return {"pickle": base64.b64encode(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
                .decode("ascii")}
    except Exception as exc:
        where, value = _unpicklable(payload)
        return (f"case data: {where} is {type(value).__module__}.{type(value).__qualname__}, "
                f"which cannot be sent to the scorer process ({type(exc).__name__}: {exc}); "
                "check_scorer(path) passes each case's own objects (pickled), so use values "
                "that pickle, or check the function in this process with check_scorer(score)")


def _unpicklable(payload: dict[str, Any]) -> tuple[str, Any]:
    """The innermost field (``input['a'][2]``) that does not pickle, and its value."""

    def fails(value: Any) -> bool:
        try:
            pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            return True
        return False

    def find(where: str, value: Any) -> tuple[str, Any]:
        items: list[tuple[str, Any]] = []
        if isinstance(value, dict):
            items = [(f"{where}[{k!r}]", v) for k, v in value.items()]
        elif isinstance(value, list | tuple):
            items = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        for inner, item in items:
            if fails(item):
                return find(inner, item)
        return where, value

    for name in CASE_FIELDS:
        if name in payload and fails(payload[name]):
            return find(name, payload[name])
    return "the case", payload


class _Child:
    """One scorer process and the threads that read its output."""

    def __init__(self, path: Path) -> None:
        self.path = path
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT,
                                                        env.get("PYTHONPATH")) if p)
        env["PYTHONIOENCODING"] = "utf-8"
        # Its own session: at the timeout the whole group is killed, including anything the
        # scorer started (subprocess.run(["sleep", "60"]) must not outlive the timeout).
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "metrickit.scoring.child"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, text=True, encoding="utf-8", errors="replace", start_new_session=True,
        )
        self.messages: queue.Queue[Any] = queue.Queue()
        self._readers_deadline: float | None = None
        self.stderr: collections.deque[str] = collections.deque(maxlen=40)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._readers = [
            threading.Thread(target=self._read_messages, args=(self.proc.stdout,), daemon=True),
            threading.Thread(target=self._read_stderr, args=(self.proc.stderr,), daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        self.send({"path": str(path)})

    def _read_messages(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                try:
                    self.messages.put(json.loads(line))
                except json.JSONDecodeError:
                    self.stderr.append(_clip(line.rstrip("\n")))
        finally:
            self.messages.put(_EOF)
            stream.close()  # the reader owns its stream: nobody closes it under a blocked read

    def _read_stderr(self, stream: IO[str]) -> None:
        """Keep the first _STDERR_LINE_LIMIT characters of each line, count the rest.

        Reads the pipe in chunks: a scorer writing 300 MB without a newline costs a chunk.
        """
        fd = stream.fileno()
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        head: list[str] = []
        kept = more = 0
        try:
            while True:
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except OSError:
                    chunk = b""
                text = decoder.decode(chunk, final=not chunk)
                for i, part in enumerate(text.split("\n")):
                    if i:
                        self.stderr.append(_clipped("".join(head).rstrip("\r"), more))
                        head, kept, more = [], 0, 0
                    take = part[: max(0, _STDERR_LINE_LIMIT - kept)]
                    head.append(take)
                    kept += len(take)
                    more += len(part) - len(take)
                if not chunk:
                    break
            if kept or more:
                self.stderr.append(_clipped("".join(head).rstrip("\r"), more))
        finally:
            stream.close()

    def send(self, obj: Any) -> bool:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(_dumps(obj) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return False
        return True

    def receive(self, timeout: float) -> Any:
        """The next message (answering judge requests on the way), _EOF, or None on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.messages.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if isinstance(message, dict) and message.get("type") == "llm":
                self.send(_answer_judge(message))
                continue
            return message

    def death(self) -> str:
        """Why the process ended, with the scorer's line when the crash report names it."""
        self._end(5.0)
        code = self.proc.returncode
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            text = f"the scorer process was killed by {name} (the interpreter crashed)"
        else:
            text = (f"the scorer process exited with code {code} without returning a result "
                    "(os._exit or a crash)")
        where = self._crash_line()
        if where:
            text += f" at {where}"
        tail = [line.strip() for line in self.stderr
                if line.strip() and not line.strip().startswith(_CRASH_NOISE)][-3:]
        if tail:
            text += f"; stderr: {' | '.join(tail)}"
        return text

    def _crash_line(self) -> str | None:
        pattern = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?: in (?P<fn>\S+))?')
        for line in self.stderr:
            match = pattern.search(line)
            if match and Path(match["file"]).name == self.path.name:
                return f"{self.path.name}:{match['line']}"
        return None

    def _end(self, grace: float) -> None:
        """Let the process exit within ``grace`` s, then kill its whole group (see _proc)."""
        end_group(self.proc, grace)
        if self._readers_deadline is None:  # one grace period per process, not per call
            self._readers_deadline = time.monotonic() + READER_GRACE
        join_readers(self._readers, self._readers_deadline)

    def kill(self) -> None:
        self._end(0.0)

    def close(self) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.close()
        self._end(5.0)


def _clip(line: str) -> str:
    return _clipped(line[:_STDERR_LINE_LIMIT], max(0, len(line) - _STDERR_LINE_LIMIT))


def _clipped(head: str, more: int) -> str:
    return f"{head}... ({more} more characters)" if more else head


def _answer_judge(request: dict[str, Any]) -> dict[str, Any]:
    from metrickit.scoring.judge import get_judge, llm

    if get_judge() is None:
        from metrickit.scoring.judge import NOT_CONFIGURED

        return {"ok": False, "not_configured": True, "error": NOT_CONFIGURED}
    try:
        value = llm(request.get("prompt", ""), **request.get("kwargs", {}))
    except Exception as exc:
        return {"ok": False, "not_configured": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"ok": True, "value": value}


def _failure(problem: str, ms: float | None, *, timed_out: bool = False) -> dict[str, Any]:
    return {"returned": None, "score": None, "feedback": None, "scores": {}, "ms": ms,
            "timed_out": timed_out, "problems": [problem]}


def _start(path: Path, timeout: float) -> tuple[_Child | None, dict[str, Any]]:
    """A child that loaded the scorer, and its ready message (``problems`` when it failed)."""
    child = _Child(path)
    message = child.receive(_STARTUP_TIMEOUT)
    if isinstance(message, dict) and message.get("type") == "alive":
        message = child.receive(timeout)
    if message is None:
        child.kill()
        child.close()
        return None, {"arity": 0, "problems": [
            f"{path}: loading the file took longer than the timeout ({timeout:g} s)"]}
    if message is _EOF:
        problem = f"{path}: loading the file ended the process: {child.death()}"
        child.close()
        return None, {"arity": 0, "problems": [problem]}
    if message.get("problems"):
        child.close()
        return None, message
    return child, message


def check_path(
    path: Path, payloads: list[dict[str, Any]], *, timeout: float
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Load ``path`` in a child process and run each payload.

    Returns the first ready message (``arity``, ``problems``, ``spec_problems``,
    ``reward_spec``) and one result per payload.
    """
    child, ready = _start(path, timeout)
    if ready.get("problems"):
        return ready, []
    results: list[dict[str, Any]] = []
    try:
        for payload in payloads:
            if child is None:
                child, again = _start(path, timeout)
                problems = again.get("problems") or ["unknown"]
                if child is None:
                    results.append(_failure(f"could not restart the scorer: {problems[0]}", None))
                    continue
            # A crash report quotes stderr: only what this case wrote, not earlier cases.
            child.stderr.clear()
            start = time.perf_counter()
            encoded = _encode_case(payload)
            if isinstance(encoded, str):
                results.append(_failure(encoded, None))
                continue
            message = child.receive(timeout) if child.send(encoded) else _EOF
            ms = (time.perf_counter() - start) * 1000
            if message is None:
                child.kill()
                child.close()
                child = None
                results.append(_failure(
                    f"timed out: no result within {timeout:g} s (the scorer process was stopped)",
                    timeout * 1000, timed_out=True))
            elif message is _EOF:
                results.append(_failure(child.death(), ms))
                child.close()
                child = None
            else:
                assert isinstance(message, dict)
                message.pop("type", None)
                results.append(message)
    finally:
        if child is not None:
            child.close()
    return ready, results


def _main() -> None:
    import faulthandler

    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # the scorer's prints, Python and C level, go to stderr
    faulthandler.enable()

    def send(obj: Any) -> None:
        channel.write(_dumps(obj) + "\n")
        channel.flush()

    from metrickit.errors import JudgeNotConfiguredError, ScorerError
    from metrickit.scoring.contract import (
        call_scorer,
        load_scorer,
        reward_spec_problems,
        scorer_arity,
        source_file_of,
    )
    from metrickit.scoring.judge import set_judge

    def remote_judge(prompt: str, **kwargs: Any) -> Any:
        send({"type": "llm", "prompt": prompt, "kwargs": kwargs})
        reply = json.loads(sys.stdin.readline())
        if reply.get("ok"):
            return reply.get("value")
        if reply.get("not_configured"):
            raise JudgeNotConfiguredError(reply["error"])
        raise RuntimeError(f"the judge failed: {reply.get('error')}")

    set_judge(remote_judge)
    send({"type": "alive"})
    init = json.loads(sys.stdin.readline())
    try:
        score, spec = load_scorer(init["path"])
    except ScorerError as exc:
        send({"type": "ready", "arity": 0, "problems": [str(exc)]})
        return
    arity, reason = scorer_arity(score)
    send({"type": "ready", "arity": arity, "problems": [reason] if reason else [],
          "spec_problems": reward_spec_problems(spec),
          "reward_spec": spec if isinstance(spec, dict) else None})
    if reason:
        return
    scorer_file = source_file_of(score)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            payload = pickle.loads(base64.b64decode(json.loads(line)["pickle"]))
        except Exception as exc:  # a class the parent has and this process cannot import
            send({"type": "result", **_failure(
                f"case data: the scorer process cannot rebuild the case's objects "
                f"({type(exc).__name__}: {exc}); use values of importable types (a class "
                "defined in a notebook or __main__ is not), or check the function in this "
                "process with check_scorer(score)", None)})
            continue
        result = call_scorer(score, arity, payload, None, scorer_file)
        send({"type": "result", **result})


if __name__ == "__main__":
    _main()
