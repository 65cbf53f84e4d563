"""Reading tables exactly as written: ids stay text, values are parsed by one explicit rule.

CSV files are read as text (no type guessing), so ids such as ``007`` and ``7`` or ``1.10``
and ``1.1`` stay distinct and ``NA`` stays the id ``NA``; only an empty id is missing, and
that is an error naming the row. Score cells are parsed by :func:`numeric_values`: the
tokens in :data:`MISSING_TOKENS` are missing, ``True``/``False`` are 1/0, anything else
must be a number.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from benchmirt_bayes.errors import ResponseDataError, limit_listing

TableLike = pd.DataFrame | str | Path
MISSING_TOKENS = frozenset({"", "NA", "N/A", "n/a", "NaN", "nan", "null", "NULL", "None"})
"""Score cells read as missing (ids are never read as missing: only an empty id is)."""
BOOLEAN_TOKENS = {"True": 1.0, "true": 1.0, "TRUE": 1.0, "False": 0.0, "false": 0.0, "FALSE": 0.0}
DELIMITERS = (",", ";", "\t", "|")
PARQUET_SUFFIXES = (".parquet", ".pq")
TEXT_SUFFIXES = (".csv", ".tsv", ".txt", ".gz")
GIT_LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"
"""How a Git LFS pointer file begins (what a repository holds until ``git lfs pull``)."""
UNNAMED_INDEX = "Unnamed: 0"
"""The name of an unnamed first column (as pandas names the index that ``to_csv`` writes)."""


def read_table(source: TableLike) -> pd.DataFrame:
    """A DataFrame, CSV / TSV (optionally gzipped) or Parquet file, with cells as written.

    CSV cells come back as strings; the delimiter is the one of ``, ; tab |`` that the
    header line uses most. Duplicate column names, unreadable bytes and empty tables are
    errors that name the file.
    """
    if isinstance(source, pd.DataFrame):
        duplicated = source.columns[source.columns.duplicated()]
        if len(duplicated):
            raise ResponseDataError([f"duplicate column name(s): {limit_listing(duplicated.unique())}"])
        table = source
        label = "a DataFrame"
    else:
        path = Path(source)
        label = str(path)
        if not path.exists():
            raise ResponseDataError([f"file not found: {path}"])
        if path.is_dir():
            raise ResponseDataError([f"{path} is a folder, not a table"])
        suffix = path.suffix.lower()
        if suffix in PARQUET_SUFFIXES:
            table = _read_parquet(path)
        elif suffix in TEXT_SUFFIXES or not suffix:
            table = _read_text_table(path)
        else:
            raise ResponseDataError(
                [
                    f"{path.name}: unknown table type {path.suffix!r} (use .csv, .tsv, .csv.gz or "
                    ".parquet; py-irt JSON lines under another name: format='pyirt')"
                ]
            )
    if table.shape[0] == 0 or table.shape[1] == 0:
        raise ResponseDataError(["the table is empty"], source=label)
    return table


def refuse_git_lfs_pointers(paths: Iterable[Path], source: str | Path) -> None:
    """One error naming every file that is a Git LFS pointer, not the file it stands for."""
    pointers = []
    for path in paths:
        try:
            with Path(path).open("rb") as handle:
                if handle.read(len(GIT_LFS_POINTER)) == GIT_LFS_POINTER:
                    pointers.append(Path(path).name)
        except OSError:
            continue
    if pointers:
        raise ResponseDataError(
            [
                f"{len(pointers)} file(s) are Git LFS pointers, not the results they stand for: "
                f"{limit_listing(pointers, 5)}; run `git lfs pull` in their repository (or download "
                "the files themselves)"
            ],
            source=str(source),
        )


def _read_parquet(path: Path) -> pd.DataFrame:
    refuse_git_lfs_pointers([path], path)
    try:
        table = pd.read_parquet(path)
    except Exception as exc:
        raise ResponseDataError(
            [f"could not read {path.name} as Parquet ({type(exc).__name__}: {exc})"], source=str(path)
        ) from exc
    duplicated = table.columns[table.columns.duplicated()]
    if len(duplicated):
        raise ResponseDataError(
            [f"duplicate column name(s): {limit_listing(duplicated.unique())}"], str(path)
        )
    return table


def _read_text_table(path: Path) -> pd.DataFrame:
    refuse_git_lfs_pointers([path], path)
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        elif path.suffix.lower() == ".gz":
            raise OSError("not a gzip file")
        if b"\x00" in raw[:4096]:
            raise OSError("binary content (NUL bytes), not a text table")
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ResponseDataError(
            [
                f"{path.name} is not UTF-8 text: byte {exc.start} (line {line}) is "
                f"{raw[exc.start : exc.start + 1]!r}"
            ],
            source=str(path),
        ) from None
    except (OSError, EOFError) as exc:
        raise ResponseDataError(
            [f"could not read {path.name} as a table ({type(exc).__name__}: {exc})"], source=str(path)
        ) from exc
    if not text.strip():
        raise ResponseDataError(["the table is empty"], source=str(path))
    header_line = text.splitlines()[0]
    delimiter = max(DELIMITERS, key=header_line.count)
    header, body = _rows_as_header(text, delimiter, path)
    return pd.DataFrame(body, columns=header, dtype=str)


def _rows_as_header(text: str, delimiter: str, path: Path) -> tuple[list[str], list[list[str]]]:
    """The header and the data rows, every row exactly as wide as the header.

    A delimiter closing every line (the header's too, or only the data rows') is dropped; any
    other row of another width, an empty or repeated column name is an error naming its line.
    Only the first column may be unnamed (:data:`UNNAMED_INDEX`). Blank lines are skipped.
    """
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        header = next(reader)
        rows, lines = [], []
        for row in reader:
            if row and any(cell.strip() for cell in row):
                rows.append(row)
                lines.append(reader.line_num)
    except csv.Error as exc:
        raise ResponseDataError(
            [f"could not read {path.name} as a table (line {reader.line_num}: {exc})"],
            source=str(path),
        ) from None
    widths = np.array([len(row) for row in rows], dtype=int)
    closing_every_row = rows and all(row[-1] == "" for row in rows)
    if header and header[-1] == "" and closing_every_row and (widths == len(header)).all():
        header, rows = header[:-1], [row[:-1] for row in rows]
    elif closing_every_row and (widths == len(header) + 1).all():
        rows = [row[:-1] for row in rows]
    if header and not header[0].strip():
        header[0] = UNNAMED_INDEX  # the index column pandas' to_csv writes without a name
    problems = []
    empty = [i + 1 for i, column in enumerate(header) if not column.strip()]
    if empty:
        problems.append(
            f"the header has {len(empty)} empty column name(s), at column(s) {limit_listing(empty)} "
            "(counted from 1)"
        )
    duplicated = list(dict.fromkeys(c for i, c in enumerate(header) if c in header[:i]))
    if duplicated:
        problems.append(f"duplicate column name(s) in the header: {limit_listing(duplicated)}")
    wrong = [(line, len(row)) for line, row in zip(lines, rows, strict=True) if len(row) != len(header)]
    if wrong:
        listed = ", ".join(f"line {line} has {width}" for line, width in wrong[:10])
        more = f" and {len(wrong) - 10} more" if len(wrong) > 10 else ""
        problems.append(
            f"{len(wrong)} row(s) do not have the header's {len(header)} fields: {listed}{more} "
            "(a stray or missing delimiter shifts every cell after it)"
        )
    if problems:
        raise ResponseDataError(problems, source=str(path))
    return header, rows


def text_ids(values: Iterable[object], what: str) -> tuple[np.ndarray, list[str]]:
    """Ids as strings exactly as written; empty or missing ids are problems naming their rows.

    Rows are counted from 0 after the header (a CSV file's line is the row + 2).
    """
    values = pd.Series(list(values), dtype=object)
    missing = values.isna() | values.map(lambda v: isinstance(v, str) and v.strip() == "")
    problems = []
    if missing.any():
        rows = np.flatnonzero(missing.to_numpy()).tolist()
        problems.append(
            f"{int(missing.sum())} empty or missing {what} id(s) at table row(s) {limit_listing(rows)} "
            "(counted from 0 after the header)"
        )
    return values.map(lambda v: v if isinstance(v, str) else str(v)).to_numpy(dtype=object), problems


def numeric_values(frame: pd.DataFrame) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Score cells as floats; also the (row, column) positions of cells that are not numbers.

    Text cells are parsed all at once (not column by column): stripped of
    spaces, :data:`MISSING_TOKENS` missing, :data:`BOOLEAN_TOKENS` 1/0, anything else a number.
    """
    values = np.empty(frame.shape, dtype=float)
    text_columns = []
    for c in range(frame.shape[1]):
        column = frame.iloc[:, c]
        if column.dtype == object or pd.api.types.is_string_dtype(column):
            text_columns.append(c)
        elif pd.api.types.is_bool_dtype(column):
            values[:, c] = column.astype(float).to_numpy()
        else:
            values[:, c] = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    if not text_columns:
        return values, []
    cells = frame.iloc[:, text_columns].to_numpy(dtype=object)
    parsed, failed = _parse_cells(cells.ravel(order="F"))
    values[:, text_columns] = parsed.reshape(cells.shape, order="F")
    columns, rows = np.nonzero(failed.reshape(cells.shape, order="F").T)
    return values, [(int(r), text_columns[c]) for c, r in zip(columns, rows, strict=True)]


def _parse_cells(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Floats of a flat object array of cells, and the mask of cells that are not numbers."""
    try:  # every cell a number already ("nan" among them is missing either way)
        return cells.astype(float), np.zeros(cells.size, dtype=bool)
    except (TypeError, ValueError):
        pass
    series = pd.Series(cells, dtype=object)
    absent = series.isna().to_numpy()
    text = series.astype("string").str.strip()
    missing = absent | text.isin(MISSING_TOKENS).to_numpy(dtype=bool, na_value=False)
    boolean = text.map(BOOLEAN_TOKENS).to_numpy(dtype=float, na_value=np.nan)
    is_boolean = ~np.isnan(boolean)
    numbers = pd.to_numeric(text.where(~(missing | is_boolean)), errors="coerce")
    parsed = np.where(is_boolean, boolean, numbers.to_numpy(dtype=float, na_value=np.nan))
    parsed[missing] = np.nan
    return parsed, np.isnan(parsed) & ~missing


def looks_numeric(values: Iterable[object]) -> bool:
    """Whether every non-missing value is a number (as :func:`numeric_values` reads them)."""
    parsed, bad = numeric_values(pd.DataFrame({"v": pd.Series(list(values), dtype=object)}))
    return not bad and bool(np.isfinite(parsed).any())
