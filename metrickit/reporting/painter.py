"""The report's figures drawn in a second process while the first computes the numbers.

Half of ``metrickit report``'s time on the example job is matplotlib: importing it (0.5-0.7
seconds) and drawing two figures and their PNGs (0.4-0.6 s), none of which the numbers wait
for. Inside :func:`painting`, :func:`later` sends a drawing to a child process forked at the
start of the command, before the sources are read; the child imports matplotlib and draws a
warm-up text while this process imports pandas and reads the sources, then draws each figure
while this process goes on with the next section. A drawing is awaited where the page
needs it (its PNG, when the template is rendered).

The fork happens only where it is safe and can pay: on Linux, with at least two cores, in a
process that runs no other thread (a thread holding a lock at the fork would leave it held
in the child for ever; a Jupyter kernel, a pytest-xdist worker, a process that imported
numpy with a threaded BLAS and any program that started a thread draw in their own
process), and unless ``METRICKIT_NO_FORK`` is set to anything but
``""`` or ``0``. Elsewhere :func:`later` draws in this process when the drawing is first
asked for: the same bytes.

The child draws with the same functions on a copy of the same arguments (they are pickled),
so a figure is the same whichever process drew it. If the child fails (killed, or an
argument cannot be pickled), the drawing is done again here; where that succeeds, a
:class:`~metrickit.errors.MetrickitWarning` says what the child reported, so no failure goes
unseen, and where it fails too its error is the one raised.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from metrickit.errors import MetrickitWarning

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

__all__ = ["NO_FORK", "can_fork", "later", "painting"]

T = TypeVar("T")

#: The environment variable that keeps every drawing in the report's own process.
NO_FORK = "METRICKIT_NO_FORK"

_PAINTER: ContextVar[ProcessPoolExecutor | None] = ContextVar("metrickit_painter",
                                                                default=None)


def can_fork() -> bool:
    """Whether :func:`painting` would fork a drawing process here (see the module)."""
    if os.environ.get(NO_FORK, "") not in ("", "0"):
        return False
    if not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2:
        return False
    # every thread of the process, those started below the threading module too (an
    # execnet worker's, OpenBLAS' pool once numpy is imported)
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


@contextmanager
def painting() -> Iterator[bool]:
    """Within it, :func:`later` draws in a child process forked on entry (where
    :func:`can_fork`; it gives whether it forked); the child is told to stop on exit."""
    if not can_fork():
        yield False
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
    pool.submit(_warm)  # forks now: matplotlib's import overlaps the sources' reading
    token = _PAINTER.set(pool)
    try:
        yield True
    except BaseException:
        _stop(pool)  # an error or Ctrl-C: nothing it draws is wanted, and exit waits for it
        raise
    finally:
        _PAINTER.reset(token)
        # waited for: the child is idle (or ended above) and exits at once, and the pool's
        # thread is gone before the interpreter's exit, which in Python 3.11 can otherwise
        # write to its closed pipe ("OSError: [Errno 9] Bad file descriptor", about 1 run
        # in 70 with shutdown(wait=False))
        pool.shutdown(wait=True, cancel_futures=True)


def _stop(pool: ProcessPoolExecutor) -> None:
    """End the drawing process now, whatever it is doing."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def later(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Callable[[], T]:
    """``fn(*args, **kwargs)``, begun in the drawing process within :func:`painting`, and
    done here otherwise; the call returned waits for the result (computed once)."""
    pool = _PAINTER.get()
    if pool is None:
        return functools.cache(functools.partial(fn, *args, **kwargs))
    future = pool.submit(fn, *args, **kwargs)
    return functools.cache(functools.partial(_awaited, future, fn, args, kwargs))


def _awaited(future: Future[T], fn: Callable[..., T], args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> T:
    try:
        return future.result()
    except BaseException as error:  # the child's failure is reported, the drawing redone
        if isinstance(error, KeyboardInterrupt | SystemExit):
            raise
        result = fn(*args, **kwargs)  # where this fails too, its error is the one raised
        warnings.warn(
            f"the report's drawing process failed on {getattr(fn, '__name__', fn)!r} "
            f"({type(error).__name__}: {error}); it was drawn in this process instead",
            MetrickitWarning, stacklevel=2)
        return result


def _warm() -> None:
    """In the child: matplotlib and the plots imported, and one text drawn (the font
    loaded), while the parent reads the sources."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's, which ends this
    import matplotlib

    matplotlib.use("Agg")
    import pandas  # the arguments' frames
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    import metrickit.reporting.plots  # noqa: F401

    figure = Figure(figsize=(1, 1))
    figure.text(0.5, 0.5, "0.5")
    FigureCanvasAgg(figure).draw()
    # what the first figure would otherwise load after the parent sends it, while this
    # process waits for the ranking: narwhals' pandas backend (the plots read their frames
    # through it, 60-80 ms) and the image plugins of the first PNG
    import narwhals
    from PIL import Image

    narwhals.from_native(pandas.DataFrame({"x": [0.5]})).get_column("x").to_list()
    Image.preinit()
