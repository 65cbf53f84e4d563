"""Argument checks that every layer shares: one rule, one message, wherever a count is taken."""

from __future__ import annotations

from typing import Any

import numpy as np


def check_integer(name: str, value: Any, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` if it is an integer in ``[minimum, maximum]``.

    Parameters
    ----------
    name
        The argument's name, as the user wrote it (it opens the error message).
    value
        What was given. Python and NumPy integers pass; booleans, floats (``2.0`` too) and
        strings do not.
    minimum, maximum
        Inclusive bounds; ``maximum=None`` leaves the top open.

    Returns
    -------
    int
        ``value`` as a Python integer.

    Raises
    ------
    ValueError
        ``value`` is not an integer or lies outside the bounds; the message names ``name``,
        the rule and the value given.

    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | np.integer)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        if maximum is not None:
            rule = f"an integer in {minimum}..{maximum}"
        elif minimum == 1:
            rule = "a positive integer"
        elif minimum == 0:
            rule = "a non-negative integer"
        else:
            rule = f"an integer of at least {minimum}"
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return int(value)
