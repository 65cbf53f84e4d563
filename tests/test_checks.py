"""The shared integer rule: what passes, what is refused, and what the message says."""

import numpy as np
import pytest

from benchmirt_bayes.checks import check_integer
from benchmirt_bayes.inference.settings import NutsSettings


@pytest.mark.parametrize("value", [1, 7, np.int64(3), np.int32(1)])
def test_integers_in_range_pass_as_python_ints(value):
    result = check_integer("n", value)
    assert result == int(value) and type(result) is int


@pytest.mark.parametrize(
    ("value", "minimum", "maximum", "message"),
    [
        (0, 1, None, "n must be a positive integer, got 0"),
        (True, 1, None, "n must be a positive integer, got True"),
        (2.0, 1, None, "n must be a positive integer, got 2.0"),
        ("3", 1, None, "n must be a positive integer, got '3'"),
        (-1, 0, None, "n must be a non-negative integer, got -1"),
        (1, 2, None, "n must be an integer of at least 2, got 1"),
        (16, 1, 15, "n must be an integer in 1..15, got 16"),
    ],
)
def test_everything_else_is_refused_by_name(value, minimum, maximum, message):
    with pytest.raises(ValueError) as raised:
        check_integer("n", value, minimum=minimum, maximum=maximum)
    assert str(raised.value) == message


def test_bounds_are_inclusive():
    assert check_integer("n", 0, minimum=0) == 0
    assert check_integer("n", 15, minimum=1, maximum=15) == 15


def test_settings_use_the_rule():
    with pytest.raises(ValueError, match=r"tune must be a non-negative integer, got 1\.5"):
        NutsSettings(tune=1.5)
    with pytest.raises(ValueError, match="chains must be a positive integer, got True"):
        NutsSettings(chains=True)
