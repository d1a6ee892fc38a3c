"""`stoker logs export`'s CSV writer with a forked helper: the same bytes as csv.writer.

With ``processes=2`` a table of two rows or more is formatted half here and half in a forked
child; the bytes written equal csv.writer's, after whatever the stream already held.
"""

from __future__ import annotations

import pytest
from cli_logs_helpers import check_csv_is_byte_identical_to_csv_writer, export_table, reference_csv

from stoker.cli._export import write_csv


@pytest.mark.parametrize("processes", [2])
@pytest.mark.parametrize("rows", [2, 1001])
def test_csv_is_byte_identical_to_csv_writer(processes: int, rows: int, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Column-wise formatting, with or without a forked helper, writes csv.writer's bytes."""
    check_csv_is_byte_identical_to_csv_writer(processes, rows, tmp_path)


def test_the_forked_half_follows_the_first_in_a_stream_already_written_to(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Text written before the table stays first; the helper's half lands after the parent's."""
    table = export_table(600)
    path = tmp_path / "out.csv"
    with open(path, "w", newline="", encoding="utf-8") as stream:
        stream.write("# preface\n")
        write_csv(stream, table, processes=2)
    assert path.read_text(encoding="utf-8") == "# preface\n" + reference_csv(table)
