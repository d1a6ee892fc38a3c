"""The `stoker logs` subcommands for tests: run them in this process, build their log dirs.

:func:`run_cli` runs ``stoker logs ...`` with a parser carrying only ``logs``; the fixture
``large`` (:func:`large_fixture`: import that name into a test module, whose tests then ask for
``large``) is a log dir read by two reader worker processes; :func:`export_table` and
:func:`reference_csv` are the export tests' table and the bytes csv.writer writes for it. The
``check_*`` functions are test bodies that the unit tests run in this process and the
integration tests with processes.
"""

from __future__ import annotations

import argparse
import csv
import io
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from stoker.cli._commands import add_logs_parser
from stoker.cli._export import COLUMNS, write_csv
from stoker.tensorboard import SummaryWriter


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` with a parser carrying only ``logs`` and run the chosen subcommand."""
    parser = argparse.ArgumentParser(prog="stoker")
    add_logs_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    code: int = args.func(args)
    return code


def logs_subcommand(command: str, path: str, output: Path, run: str | None = None) -> list[str]:
    """The arguments of ``stoker logs COMMAND`` over ``path``.

    The arguments of ``stoker logs COMMAND`` over ``path``: ``show`` shows tag ``loss`` (of
    ``run``, when given), ``export`` writes CSV to stdout, ``plot`` draws ``loss`` to ``output``.
    """
    return {
        "ls": ["logs", "ls", path],
        "show": ["logs", "show", path, "loss", *(["--run", run] if run is not None else [])],
        "export": ["logs", "export", path, "--csv", "-"],
        "plot": ["logs", "plot", path, "loss", "-o", str(output)],
    }[command]


def table_rows(text: str) -> list[list[str]]:
    """The lines of a printed table, each split into its whitespace-separated cells."""
    return [line.split() for line in text.strip().splitlines()]


def one_point_log(directory: Path) -> Path:
    """Write one ``loss`` point into ``directory``; return its event file."""
    with SummaryWriter(str(directory)) as writer:
        writer.add_scalar("loss", 1.0, 1)
    (file,) = directory.iterdir()
    return file


@pytest.fixture(name="large")
def large_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Four runs, read by two worker processes as a large log dir is.

    Four runs, read by two worker processes as a log dir of 32 MiB or more on a machine of
    two cores or more is (parallel.PARALLEL_MIN_BYTES lowered to one byte; threads other tests
    left behind would make the reader read in-process).
    """
    from stoker.tensorboard._read import parallel

    for index in range(4):
        with SummaryWriter(str(tmp_path / "logs" / f"run{index}")) as writer:
            for step in range(20):
                writer.add_scalar("loss", float(index * 100 + step), step)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(parallel, "usable_cpu_count", lambda: 2)
    monkeypatch.setattr(parallel.threading, "active_count", lambda: 1)
    return tmp_path / "logs"


def check_run_removed_while_read(
    large: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], workers: str
) -> None:
    """`logs ls` lists the other runs when one is removed just before it is read.

    `logs ls` over a log dir one of whose runs is removed just before it is read lists the
    other runs, says which file was skipped in one warning line and exits 0; it was one error
    line for the whole log dir, no run listed. ``workers`` is ``"workers"`` (the ``large``
    fixture's two worker processes) or ``"in-process"``.
    """
    from stoker.tensorboard._read import parallel
    from stoker.tensorboard._read.run import RunData

    if workers == "in-process":
        monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1 << 40)
    original = RunData.load

    def load(self: RunData) -> int:
        if self.name == "run1":
            shutil.rmtree(large / "run1")
        return original(self)

    monkeypatch.setattr(RunData, "load", load)
    assert run_cli(["logs", "ls", str(large)]) == 0
    captured = capsys.readouterr()
    assert [row[0] for row in table_rows(captured.out)[1:]] == ["run0", "run2", "run3"]
    (line,) = captured.err.splitlines()
    assert line.startswith(f"stoker logs: warning: '{large}/run1/")
    assert line.endswith("skipped, it was removed after the log dir was listed")


def export_table(rows: int) -> dict[str, np.ndarray]:
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


def reference_csv(table: dict[str, np.ndarray]) -> str:
    """What csv.writer writes for ``table``: the header, then a row a point (floats by repr)."""
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


def check_csv_is_byte_identical_to_csv_writer(processes: int, rows: int, tmp_path: Path) -> None:
    """Column-wise formatting, with or without a forked helper, writes csv.writer's bytes."""
    table = export_table(rows)
    path = tmp_path / "out.csv"
    with open(path, "w", newline="", encoding="utf-8") as stream:
        assert write_csv(stream, table, processes=processes) == rows
    assert path.read_text(encoding="utf-8") == reference_csv(table)
