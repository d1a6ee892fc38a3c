"""`stoker logs export`'s CSV writer: the same bytes as csv.writer, formatted in this process."""

from __future__ import annotations

import pytest
from cli_logs_helpers import check_csv_is_byte_identical_to_csv_writer


# processes=2 forks a helper from two rows on: those cases are in
# tests/integration/cli/test_cli_export_fork.py
@pytest.mark.parametrize(("rows", "processes"), [(0, 1), (1, 1), (2, 1), (1001, 1), (0, 2), (1, 2)])
def test_csv_is_byte_identical_to_csv_writer(processes: int, rows: int, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Column-wise formatting, with or without a forked helper, writes csv.writer's bytes."""
    check_csv_is_byte_identical_to_csv_writer(processes, rows, tmp_path)
