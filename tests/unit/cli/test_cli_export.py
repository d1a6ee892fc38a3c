"""`stoker logs export`'s CSV writer: the same bytes as csv.writer, formatted in this process."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from stoker.cli._export import COLUMNS, write_csv


def _table(rows: int) -> dict[str, np.ndarray]:
    """Three (run, tag) stretches, names that need quoting, awkward floats."""
    third = rows // 3
    run = np.array(["a"] * third + ['b,"x"'] * third + ["c\nd"] * (rows - 2 * third), dtype=object)
    tag = np.array(["loss"] * (rows // 2) + ["acc/top 1"] * (rows - rows // 2), dtype=object)
    rng = np.random.default_rng(0)
    values = rng.normal(size=rows)
    values[::7] = np.nan
    values[1::11] = 1e-300
    values[2::13] = -np.inf
    return {
        "run": run,
        "tag": tag,
        "step": np.arange(rows, dtype=np.int64) * 3 - 5,
        "wall_time": 1.7e9 + rng.random(rows),
        "value": values,
    }


def _reference(table: dict[str, np.ndarray]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(
        zip(
            table["run"].tolist(),
            table["tag"].tolist(),
            table["step"].tolist(),
            map(repr, table["wall_time"].tolist()),
            map(repr, table["value"].tolist()),
            strict=True,
        )
    )
    return out.getvalue()


# processes=2 forks a helper from two rows on: those cases are in
# tests/integration/cli/test_cli_export_fork.py
@pytest.mark.parametrize(("rows", "processes"), [(0, 1), (1, 1), (2, 1), (1001, 1), (0, 2), (1, 2)])
def test_csv_is_byte_identical_to_csv_writer(processes: int, rows: int, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Column-wise formatting, with or without a forked helper, writes csv.writer's bytes."""
    table = _table(rows)
    path = tmp_path / "out.csv"
    with open(path, "w", newline="", encoding="utf-8") as stream:
        assert write_csv(stream, table, processes=processes) == rows
    assert path.read_text(encoding="utf-8") == _reference(table)
