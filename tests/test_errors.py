"""metrickit/errors.py holds every error and warning, and the old import paths still work."""

from __future__ import annotations

import inspect
import warnings

import pytest

import metrickit as mk
from metrickit import errors


def test_every_error_is_a_metrickit_error_and_every_warning_a_metrickit_warning():
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass)
               if c.__module__ == "metrickit.errors"]
    for cls in classes:
        if issubclass(cls, Warning):
            assert issubclass(cls, errors.MetrickitWarning), cls
            assert issubclass(cls, UserWarning), cls
        elif issubclass(cls, Exception):
            assert issubclass(cls, errors.MetrickitError), cls


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("metrickit.compute.stats", "StatsError"),
        ("metrickit.compute.passk", "PassAtKSkipped"),
        ("metrickit.scoring.contract", "UncopiedInputWarning"),
    ],
)
def test_old_import_paths_give_the_same_class(module, name):
    old = getattr(__import__(module, fromlist=[name]), name)
    assert old is getattr(errors, name)
    assert old.__module__ == "metrickit.errors"


def test_stats_error_is_a_value_error():
    assert issubclass(mk.StatsError, ValueError)


def test_one_filter_silences_metrickit_warnings():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", errors.MetrickitWarning)
        warnings.warn(errors.PassAtKSkipped("skipped"), stacklevel=1)
        warnings.warn(errors.UncopiedInputWarning("uncopied"), stacklevel=1)
    assert record == []
