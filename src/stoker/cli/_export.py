"""``stoker logs export``'s writers: a scalar table to CSV or Parquet, column by column.

The CSV is what :mod:`csv` would write row by row (``run,tag,step,wall_time,value``; run and tag
quoted only when they must be; floats as Python's shortest round-trip ``repr``, so every value
reads back exactly), but it is built a column at a time: each column becomes a list of strings
with one C-level ``map``, runs of rows with the same run and tag share one quoted prefix, and
the pieces are joined and written in large blocks; a large table is formatted by two processes.
Parquet goes through pyarrow's columnar writer with the run and tag columns dictionary-encoded,
which is how Parquet stores repeated strings anyway.
"""

from __future__ import annotations

import csv
import importlib
import io
import itertools
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

from stoker._system import usable_cpu_count

__all__ = ["COLUMNS", "PARALLEL_ROWS", "write_csv", "write_parquet"]

COLUMNS = ("run", "tag", "step", "wall_time", "value")
_BLOCK = 1 << 18  # rows formatted and written at a time: bounded memory for any table size
PARALLEL_ROWS = 50_000  # below this, forking a helper costs more than it saves


def _quoted(*fields: str) -> str:
    """The fields as :mod:`csv` writes them (QUOTE_MINIMAL), each followed by a comma."""
    buffer = io.StringIO()
    # The line terminator decides what must be quoted (a field holding "\n" is): keep the one
    # the rows end with, then drop it.
    csv.writer(buffer, lineterminator="\n").writerow(fields)
    return buffer.getvalue()[:-1] + ","


def _segments(run: np.ndarray[Any, Any], tag: np.ndarray[Any, Any]) -> list[int]:
    """Row offsets where the (run, tag) pair changes, with 0 and the length at the ends."""
    if len(run) == 0:
        return [0]
    change = (run[1:] != run[:-1]) | (tag[1:] != tag[:-1])
    return [0, *(np.flatnonzero(change) + 1).tolist(), len(run)]


def _write_rows(
    stream: TextIO,
    table: dict[str, np.ndarray[Any, Any]],
    edges: list[int],
    span: tuple[int, int],
    text: Callable[[str], str],
) -> None:
    """Write rows ``span[0]`` to ``span[1]`` (no header), one prefix per (run, tag) stretch."""
    low, high = span
    run, tag = table["run"], table["tag"]
    for begin, end in itertools.pairwise(edges):
        start, stop = max(begin, low), min(end, high)
        if start >= stop:
            continue
        prefix = _quoted(text(str(run[start])), text(str(tag[start])))
        for first in range(start, stop, _BLOCK):
            last = min(first + _BLOCK, stop)
            steps = map(str, table["step"][first:last].tolist())
            walls = map(repr, table["wall_time"][first:last].tolist())
            values = map(repr, table["value"][first:last].tolist())
            count = last - first
            pieces = zip(
                itertools.repeat(prefix, count),
                steps,
                itertools.repeat(",", count),
                walls,
                itertools.repeat(",", count),
                values,
                itertools.repeat("\n", count),
                strict=True,
            )
            stream.write("".join(itertools.chain.from_iterable(pieces)))


def _write_rows_forked(
    stream: TextIO,
    table: dict[str, np.ndarray[Any, Any]],
    edges: list[int],
    text: Callable[[str], str],
) -> None:
    """Write every row with two processes: a forked child formats the second half meanwhile.

    The child inherits the table (no copy), writes its half to an unnamed temporary file and
    leaves with ``os._exit`` (no exit hooks of the parent run twice); the parent then appends it.
    """
    total = edges[-1]
    middle = total // 2
    with tempfile.TemporaryFile("w+", encoding="utf-8", newline="") as half:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child's coverage is not collected
            code = 1
            try:
                _write_rows(half, table, edges, (middle, total), text)
                half.flush()
                code = 0
            finally:
                os._exit(code)
        try:
            _write_rows(stream, table, edges, (0, middle), text)
        finally:
            _, status = os.waitpid(pid, 0)
        if status != 0:
            raise OSError(f"the process formatting rows {middle}..{total} failed ({status})")
        half.seek(0)
        shutil.copyfileobj(half, stream, 1 << 20)


def write_csv(
    stream: TextIO,
    table: dict[str, np.ndarray[Any, Any]],
    text: Callable[[str], str] = str,
    *,
    processes: int | None = None,
) -> int:
    """Write the table (as :meth:`stoker.tensorboard.Reader.scalar_table` returns it) as CSV.

    Args:
        stream: A text stream opened with ``newline=""``.
        table: Columns ``run``, ``tag``, ``step``, ``wall_time`` and ``value`` of equal length.
        text: Applied to each run and tag before quoting (``str`` keeps the data exact; the
            command escapes non-printable characters with it when writing to a terminal).
        processes: 1 formats in this process; 2 forks a helper for half the rows. By default,
            tables of at least :data:`PARALLEL_ROWS` rows use 2 where ``fork`` exists and the
            machine has more than one core (formatting floats is most of the time).

    Returns:
        The number of rows written.
    """
    stream.write(",".join(COLUMNS) + "\n")
    edges = _segments(table["run"], table["tag"])
    total = edges[-1]
    if processes is None:
        can_fork = hasattr(os, "fork") and (usable_cpu_count() or 1) > 1
        processes = 2 if can_fork and total >= PARALLEL_ROWS else 1
    if processes == 2 and total >= 2:
        stream.flush()
        _write_rows_forked(stream, table, edges, text)
    else:
        _write_rows(stream, table, edges, (0, total), text)
    return total


def write_parquet(path: str, table: dict[str, np.ndarray[Any, Any]]) -> int:
    """Write the table as a Parquet file with pyarrow; return the number of rows.

    Raises:
        ImportError: if pyarrow is not installed.
    """
    pyarrow = importlib.import_module("pyarrow")
    parquet = importlib.import_module("pyarrow.parquet")
    columns: dict[str, Any] = {}
    for name in ("run", "tag"):
        names, codes = np.unique(table[name].astype(str), return_inverse=True)
        columns[name] = pyarrow.DictionaryArray.from_arrays(
            pyarrow.array(codes.astype(np.int32)), pyarrow.array(names.tolist())
        )
    for name in ("step", "wall_time", "value"):
        columns[name] = pyarrow.array(table[name])
    parquet.write_table(pyarrow.table(columns), path)
    return len(table["step"])
