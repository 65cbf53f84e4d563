"""The package's exception types."""

from __future__ import annotations

from collections.abc import Iterable


class ResponseDataError(ValueError):
    """Bad response data: lists *every* problem found, not only the first.

    Parameters
    ----------
    problems
        One plain-language sentence per problem, naming the offending rows,
        columns or ids.
    source
        Where the data came from (a path or a short description).

    """

    def __init__(self, problems: Iterable[str], source: str | None = None) -> None:
        self.problems = list(problems)
        self.source = source
        where = f" in {source}" if source else ""
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} problem(s) found{where}:\n{lines}")


class PosteriorFileError(ValueError):
    """A stored posterior cannot be loaded: missing, truncated, corrupt or for other data."""


class MissingExtraError(ImportError):
    """An optional dependency is needed; the message names the extra to install."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the optional package '{package}'. "
            f"Install it with: pip install 'benchmirt_bayes[{extra}]'"
        )


def limit_listing(values: Iterable[object], most: int = 10) -> str:
    """Render up to ``most`` values for an error message, with a count of the rest."""
    values = [str(v) if isinstance(v, str) else v.item() if hasattr(v, "item") else v for v in values]
    shown = ", ".join(repr(v) for v in values[:most])
    if len(values) > most:
        shown += f", … ({len(values) - most} more)"
    return shown
