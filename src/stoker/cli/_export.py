"""``stoker logs export``'s writers: a scalar table to CSV or Parquet, column by column.

The CSV is what :mod:`csv` would write row by row (``run,tag,step,wall_time,value``; run and tag
quoted only when they must be; floats as Python's shortest round-trip ``repr``, so every value
reads back exactly), but it is built a column at a time: each column becomes a list of strings
with one C-level ``map``, runs of rows with the same run and tag share one quoted prefix, and
the pieces are joined and written in large blocks. Parquet goes through pyarrow's columnar
writer with the run and tag columns dictionary-encoded, which is how Parquet stores repeated
strings anyway.
"""

from __future__ import annotations

import csv
import importlib
import io
import itertools
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

__all__ = ["COLUMNS", "write_csv", "write_parquet"]

COLUMNS = ("run", "tag", "step", "wall_time", "value")
_BLOCK = 1 << 18  # rows formatted and written at a time: bounded memory for any table size


def _quoted(*fields: str) -> str:
    """The fields as :mod:`csv` writes them (QUOTE_MINIMAL), each followed by a comma."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow(fields)
    return buffer.getvalue() + ","


def _segments(run: np.ndarray[Any, Any], tag: np.ndarray[Any, Any]) -> list[int]:
    """Row offsets where the (run, tag) pair changes, with 0 and the length at the ends."""
    if len(run) == 0:
        return [0]
    change = (run[1:] != run[:-1]) | (tag[1:] != tag[:-1])
    return [0, *(np.flatnonzero(change) + 1).tolist(), len(run)]


def write_csv(
    stream: TextIO, table: dict[str, np.ndarray[Any, Any]], text: Callable[[str], str] = str
) -> int:
    """Write the table (as :meth:`stoker.tensorboard.Reader.scalar_table` returns it) as CSV.

    Args:
        stream: A text stream opened with ``newline=""``.
        table: Columns ``run``, ``tag``, ``step``, ``wall_time`` and ``value`` of equal length.
        text: Applied to each run and tag before quoting (``str`` keeps the data exact; the
            command escapes non-printable characters with it when writing to a terminal).

    Returns:
        The number of rows written.
    """
    stream.write(",".join(COLUMNS) + "\n")
    run, tag = table["run"], table["tag"]
    edges = _segments(run, tag)
    for start, stop in itertools.pairwise(edges):
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
    return edges[-1]


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
