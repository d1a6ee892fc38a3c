"""The `stoker logs` subcommands: ls, show, export, their errors, and the sparkline."""

from __future__ import annotations

import csv
import io
import math
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_logs_helpers import (
    check_run_removed_while_read,
    large_fixture,  # noqa: F401 - the fixture `large`, found by pytest in this module
    logs_subcommand,
    one_point_log,
    run_cli,
    table_rows,
)
from tb_events import write_raw_events
from tb_stores import without_aws_credentials

from stoker.cli._chart import chart
from stoker.cli._logs import SPARK_CHARS, sparkline
from stoker.tensorboard import Reader, SummaryWriter
from stoker.tensorboard._proto import wire


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    """A log directory with two runs: scalars, a histogram, text and hparams."""
    with SummaryWriter(str(tmp_path / "train")) as writer:
        for step in range(30):
            writer.add_scalar("loss", 1.0 / (step + 1), step * 10)
        writer.add_scalar("acc", 0.5, 3, new_style=True)
        writer.add_histogram("weights", np.linspace(-1, 1, 50), 5)
        writer.add_text("note", "hi", 6)
        writer.add_hparams({"lr": 0.1}, {"acc": 0.5}, same_run=True, global_step=3)
    with SummaryWriter(str(tmp_path / "eval")) as writer:
        writer.add_scalar("loss", 2.0, 7)
    return tmp_path


def test_ls_lists_runs_tags_counts_and_last_values(
    logdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ls`` prints one row per run and tag with its kind, count, last step and last value."""
    assert run_cli(["logs", "ls", str(logdir)]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert rows[0] == ["RUN", "KIND", "TAG", "COUNT", "LAST", "STEP", "LAST", "VALUE"]
    by_key = {(row[0], row[2]): row for row in rows[1:]}
    assert by_key[("train", "loss")][1:6] == ["scalars", "loss", "30", "290", "0.033333335"]
    assert by_key[("eval", "loss")][3:6] == ["1", "7", "2"]
    assert by_key[("train", "acc")][3:5] == ["2", "3"]
    assert by_key[("train", "weights")][1:5] == ["histograms", "weights", "1", "5"]
    assert by_key[("train", "note/text_summary")][1] == "text"
    assert by_key[("train", "_hparams_")][5] == "lr=0.1"


def test_show_prints_statistics_sparkline_and_last_rows(
    logdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``show`` prints the count, a sparkline, an 8-row chart, and the last --rows rows."""
    monkeypatch.setenv("COLUMNS", "80")  # the chart is fitted to the terminal's width
    assert run_cli(["logs", "show", str(logdir), "loss", "--run", "train", "--rows", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    values = Reader(logdir).scalars("loss", run="train").value
    assert lines[0] == "tag loss: 30 points"
    assert lines[1].startswith("steps 0..290")
    assert lines[2] == sparkline(values, 60)
    assert lines[2][0] == SPARK_CHARS[-1]
    assert lines[3:11] == chart(
        Reader(logdir).scalars("loss", run="train").step, values, width=80, height=8
    )
    table = [line.split() for line in lines[12:16]]
    assert [row[0] for row in table] == ["260", "270", "280", "290"]
    assert [float(row[2]) for row in table] == pytest.approx(values[-4:].tolist(), rel=1e-7)
    assert lines[16] == "(last 4 of 30 rows; --all prints every row)"


def test_show_all_prints_every_row(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--all prints one row per point and no truncation note."""
    argv = ["logs", "show", str(logdir), "loss", "--run", "train", "--all", "--height", "0"]
    assert run_cli(argv) == 0
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 3 + 1 + 30
    assert "--all prints" not in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["logs", "ls", "{root}/missing"], "does not exist"),
        (["logs", "show", "{root}/missing", "loss"], "does not exist"),
        (["logs", "export", "{root}/missing", "--csv", "-"], "does not exist"),
        (["logs", "show", "{root}", "nope"], "got 'nope'; scalars tags there: ['acc', 'loss']"),
        (["logs", "show", "{root}", "loss"], "several runs"),
        (["logs", "show", "{root}", "weights"], "holds histograms"),
        (["logs", "show", "{root}", "loss", "--run", "test"], "run must be one of"),
        (["logs", "ls", "{root}", "--run", "test"], "run must be one of"),
        (["logs", "ls", "{root}/train/empty"], "no event files"),
    ],
)
def test_errors_exit_2_with_a_message_on_stderr(
    logdir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """Missing directories, tags and runs exit with status 2 and one clear line on stderr."""
    (logdir / "train" / "empty").mkdir()
    assert run_cli([arg.format(root=logdir) for arg in argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("stoker logs: error: ")
    assert message in captured.err


def test_corrupt_records_are_reported_as_warnings_on_stderr(
    logdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A damaged record is skipped: the command succeeds and says so on stderr."""
    (path,) = (logdir / "eval").iterdir()
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # inside the data checksum of the last record (eval's only point)
    path.write_bytes(bytes(data))
    assert run_cli(["logs", "ls", str(logdir)]) == 0
    captured = capsys.readouterr()
    assert "eval" not in captured.out
    assert "train" in captured.out
    assert captured.err.startswith("stoker logs: warning: ")
    assert "corrupt record" in captured.err


def test_export_csv_holds_every_point_exactly(logdir: Path, tmp_path: Path) -> None:
    """The CSV has a header and one row per scalar point, with values that round-trip exactly."""
    target = tmp_path / "out.csv"
    assert run_cli(["logs", "export", str(logdir), "--csv", str(target)]) == 0
    with target.open(newline="") as stream:
        rows = list(csv.DictReader(stream))
    table = Reader(logdir).scalar_table()
    assert len(rows) == len(table["step"]) == 33
    assert [row["run"] for row in rows] == table["run"].tolist()
    assert [row["tag"] for row in rows] == table["tag"].tolist()
    assert [int(row["step"]) for row in rows] == table["step"].tolist()
    assert [float(row["wall_time"]) for row in rows] == table["wall_time"].tolist()
    assert [float(row["value"]) for row in rows] == table["value"].tolist()


def test_export_csv_to_stdout(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--csv - writes the CSV to standard output."""
    assert run_cli(["logs", "export", str(logdir), "--csv", "-", "--run", "eval"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == ["run", "tag", "step", "wall_time", "value"]
    assert [row[:3] + row[4:] for row in rows[1:]] == [["eval", "loss", "7", "2.0"]]


def test_export_parquet_round_trips(logdir: Path, tmp_path: Path) -> None:
    """--parquet writes a table pyarrow reads back with the same columns and values."""
    parquet = pytest.importorskip("pyarrow.parquet")
    target = tmp_path / "out.parquet"
    assert run_cli(["logs", "export", str(logdir), "--parquet", str(target)]) == 0
    table = parquet.read_table(target).to_pydict()
    expected = Reader(logdir).scalar_table()
    assert list(table) == list(expected)
    for name, column in expected.items():
        assert table[name] == column.tolist()


def test_export_parquet_without_pyarrow_exits_2(
    logdir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without pyarrow, --parquet fails with status 2 and says how to install it."""
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    assert run_cli(["logs", "export", str(logdir), "--parquet", str(tmp_path / "x")]) == 2
    assert "pip install pyarrow" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_sparkline_maps_a_ramp_to_every_level_in_order() -> None:
    """Eight evenly spaced values use the eight block characters from lowest to highest."""
    assert sparkline(np.arange(8.0) * 3 - 5) == SPARK_CHARS


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], ""),
        ([4.0, 4.0, 4.0], SPARK_CHARS[0] * 3),
        ([0.0, math.nan, 1.0], SPARK_CHARS[0] + " " + SPARK_CHARS[-1]),
        ([math.inf, -math.inf], "  "),
        ([0.0, 1.0, math.inf], SPARK_CHARS[0] + SPARK_CHARS[-1] + " "),
    ],
)
def test_sparkline_edge_cases(values: list[float], expected: str) -> None:
    """Empty input, constant values and non-finite values draw as documented."""
    assert sparkline(values) == expected


def test_sparkline_averages_into_width_columns() -> None:
    """With more values than the width, each column shows the mean of its slice."""
    values = np.repeat([0.0, 10.0, 5.0], 100)
    line = sparkline(values, width=3)
    assert line == SPARK_CHARS[0] + SPARK_CHARS[-1] + SPARK_CHARS[4]
    assert len(sparkline(np.arange(1000.0), width=17)) == 17


@pytest.mark.parametrize("width", [0, -1, 2.5, True])
def test_sparkline_rejects_bad_width(width: object) -> None:
    """The width must be a positive int."""
    with pytest.raises(ValueError, match="width must be"):
        sparkline([1.0], width=width)  # type: ignore[arg-type]


def test_docstring_examples_run() -> None:
    """The examples in the module's docstrings (the sparkline ramp) produce what they show."""
    import doctest

    import stoker.cli._logs as module

    result = doctest.testmod(module)
    assert result.attempted >= 1
    assert result.failed == 0


def _hparams_event(content: bytes) -> dict[str, Any]:
    metadata = {"plugin_data": {"plugin_name": "hparams", "content": content}}
    return {"summary": {"value": [{"tag": "_hparams_/session_start_info", "metadata": metadata}]}}


def _deeply_nested_hparams(depth: int) -> bytes:
    """session_start_info.hparams["lr"] holding a Value nested ``depth`` lists deep."""
    value = b""
    for _ in range(depth):
        value = wire.length_delimited(6, wire.length_delimited(1, value))  # list_value.values
    entry = wire.length_delimited(1, b"lr") + wire.length_delimited(2, value)
    return wire.length_delimited(3, wire.length_delimited(1, entry))


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    """Runs that each hold one thing the reader cannot decode, next to good scalars."""
    bad_tensor = {"dtype": 1, "tensor_shape": {"dim": [{"size": 3}]}, "tensor_content": b"\0" * 5}
    scalar = {"summary": {"value": [{"tag": "loss", "simple_value": 0.5}]}, "step": 1}
    write_raw_events(
        tmp_path / "tensor", [scalar, {"summary": {"value": [{"tag": "t", "tensor": bad_tensor}]}}]
    )
    write_raw_events(tmp_path / "garbage_hparams", [scalar, _hparams_event(b"\xff\xff\xff")])
    write_raw_events(
        tmp_path / "deep_hparams", [scalar, _hparams_event(_deeply_nested_hparams(5000))]
    )
    path = write_raw_events(tmp_path / "corrupt", [scalar, scalar])
    (file,) = path.iterdir()
    data = bytearray(file.read_bytes())
    data[-3] ^= 0xFF  # the last record's data checksum
    file.write_bytes(bytes(data))
    return tmp_path


@pytest.mark.parametrize("command", ["ls", "show", "export", "plot"])
def test_every_subcommand_reports_bad_records_as_warning_lines_and_goes_on(
    damaged: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Each kind of damage is one warning line; the command prints the rest and exits 0.

    A malformed tensor, garbage or 5,000-deep hparams, a corrupt record: each is one warning
    line on stderr, and the command prints everything else and exits 0 (ls used to crash).
    """
    assert run_cli(logs_subcommand(command, str(damaged), tmp_path / "x.png", run="corrupt")) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines
    assert all(line.startswith("stoker logs: warning: ") for line in lines), lines
    assert sum("corrupt record" in line for line in lines) == 1
    if command == "ls":
        assert len(lines) == 4
        assert sum("malformed" in line for line in lines) == 3
        rows = {(row[0], row[1]): row for row in table_rows(captured.out)[1:]}
        for key in (
            ("tensor", "tensors"),
            ("garbage_hparams", "hparams"),
            ("deep_hparams", "hparams"),
        ):
            assert rows[key][-1] == "(malformed)"
        assert rows[("tensor", "scalars")][3] == "1"
    if command == "export":
        assert captured.out.count("loss") == 4  # one point per run: the corrupt run kept its first


_HOSTILE = "loss\x1b]0;pwned\x07\x1b[2J\x1b[31m\u202e"


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A run, a tag, hparams and text carrying terminal escape sequences, and a corrupt record."""
    run = tmp_path / "run\x1b[2J"
    with SummaryWriter(str(run)) as writer:
        writer.add_scalar(_HOSTILE, 1.0, 1)
        writer.add_text("note\x1b[5m", "x", 1)
        writer.add_hparams({"lr\x1b[1m": "fast\x1b]0;t\x07"}, {}, same_run=True)
    (file,) = run.iterdir()
    with file.open("ab") as stream:
        stream.write(b"\x1b[2J garbage")
    return tmp_path


@pytest.mark.parametrize("command", ["ls", "show", "export"])
def test_nothing_printed_from_a_file_reaches_the_terminal_raw(
    hostile: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Escape sequences in run names, tags, hparams and warnings are printed escaped."""
    argv = {
        "ls": ["logs", "ls", str(hostile)],
        "show": ["logs", "show", str(hostile), _HOSTILE],
        "export": ["logs", "export", str(hostile), "--csv", str(hostile / "out.csv")],
    }[command]
    assert run_cli(argv) == 0
    captured = capsys.readouterr()
    for stream in (captured.out, captured.err):
        assert "\x1b" not in stream
        assert "\x07" not in stream
        assert "\u202e" not in stream
    assert "\\x1b" in captured.err  # the warning names the run's directory, escaped
    if command == "ls":
        assert "run\\x1b[2J" in captured.out
        assert "loss\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31m\\u202e" in captured.out
        assert "lr\\x1b[1m=fast\\x1b]0;t\\x07" in captured.out
    if command == "export":  # a file keeps the data exact
        with (hostile / "out.csv").open(newline="", encoding="utf-8") as stream:
            rows = list(csv.reader(stream))
        assert rows[1][:2] == ["run\x1b[2J", _HOSTILE]


def test_error_lines_are_escaped_too(hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An error naming a tag or path from the file escapes it as well."""
    assert run_cli(["logs", "show", str(hostile), "nope\x1b[2J"]) == 2
    captured = capsys.readouterr()
    assert "\x1b" not in captured.err
    assert captured.err.startswith("stoker logs: error: ")


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        """Pretend to be one."""
        return True


def test_csv_to_standard_output_is_escaped_only_on_a_terminal(
    hostile: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--csv -` into a pipe is the exact data; onto a terminal, control characters are escaped."""
    assert run_cli(["logs", "export", str(hostile), "--csv", "-"]) == 0
    piped = capsys.readouterr().out
    assert list(csv.reader(io.StringIO(piped)))[1][:2] == ["run\x1b[2J", _HOSTILE]
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert run_cli(["logs", "export", str(hostile), "--csv", "-"]) == 0
    shown = terminal.getvalue()
    assert "\x1b" not in shown
    assert "run\\x1b[2J" in shown


def test_reading_a_huge_file_shows_progress_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """While a long file is read, stderr (a terminal) shows how far; the line is cleared after."""
    import stoker.cli._logs as logs

    file = one_point_log(tmp_path)
    with file.open("ab") as stream:
        stream.write(bytes(40 << 20))
    monkeypatch.setattr(logs, "_PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(logs, "_PROGRESS_EVERY", 0.0)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert run_cli(["logs", "show", str(tmp_path), "loss"]) == 0
    shown = terminal.getvalue()
    assert "stoker logs: reading " in shown
    assert "of 40 MiB" in shown
    assert shown.count("\r\x1b[K") >= 2  # each update redraws the line; the last one clears it
    assert "tag loss: 1 points" in capsys.readouterr().out


def test_no_progress_when_stderr_is_not_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Redirected stderr gets warnings and errors only, never progress lines."""
    import stoker.cli._logs as logs

    one_point_log(tmp_path)
    monkeypatch.setattr(logs, "_PROGRESS_AFTER", 0.0)
    assert run_cli(["logs", "ls", str(tmp_path)]) == 0
    assert capsys.readouterr().err == ""


@pytest.fixture
def no_aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """An environment where botocore finds no credentials (see tb_stores)."""
    yield from without_aws_credentials(monkeypatch, tmp_path)


@pytest.fixture
def unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory holding a text file, a FIFO, and ``locked``, a directory that cannot be listed.

    ``locked`` is refused by a patched os.scandir (what os.walk lists with), as for a user
    without read permission on it: the tests run as root, who may list anything.
    """
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "events.out.tfevents.1").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("my notes\n")
    os.mkfifo(tmp_path / "pipe")
    directory = tmp_path / "locked"
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.path.abspath(os.fspath(path)) == str(directory):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return tmp_path


@pytest.mark.usefixtures("no_aws_credentials")
@pytest.mark.parametrize("command", ["ls", "show", "export", "plot"])
@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("gs://bucket/run", "needs gcsfs; install it with pip install gcsfs"),
        ("nosuchproto://bucket/run", "fsspec knows no nosuchproto:// protocol"),
        ("s3://bucket/run", "no credentials|needs credentials"),
        ("{tmp}/locked", "cannot list log directory .* Permission denied; check its permissions"),
        ("{tmp}/notes.txt", "a file that is not an event file"),
        ("{tmp}/pipe", "a FIFO; event files are regular files"),
        ("{tmp}/missing", "does not exist; check the spelling"),
    ],
    ids=[
        "no-backend",
        "unknown-protocol",
        "no-credentials",
        "unlistable",
        "text",
        "fifo",
        "missing",
    ],
)
def test_a_log_dir_that_cannot_be_read_is_one_error_line_and_status_2(
    unreadable: Path, capsys: pytest.CaptureFixture[str], command: str, where: str, message: str
) -> None:
    """Each way a log dir cannot be read is one line on stderr naming it, the cause and the fix."""
    path = where.format(tmp=unreadable)
    assert run_cli(logs_subcommand(command, path, unreadable / "x.png")) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("stoker logs: error: ")
    assert path in line
    assert re.search(message, line), line


def _follow_with(monkeypatch: pytest.MonkeyPatch, steps: list[Any]) -> None:
    """Make --follow's sleeps run ``steps`` in turn (callables); Ctrl-C after the last."""
    import stoker.cli._logs as logs

    pending = list(steps)

    def sleep(seconds: float) -> None:
        if not pending:
            raise KeyboardInterrupt
        pending.pop(0)()

    monkeypatch.setattr(logs.time, "sleep", sleep)


def test_follow_reports_damage_it_read_when_ctrl_c_ends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Corrupt bytes appended while --follow runs are reported as a warning line at Ctrl-C."""
    file = one_point_log(tmp_path)

    def damage() -> None:
        with file.open("ab") as stream:
            stream.write(b"\xff" * 40)

    _follow_with(monkeypatch, [damage])
    assert run_cli(["logs", "show", str(tmp_path), "loss", "--follow"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("stoker logs: warning: ")
    assert "corrupt record" in lines[0]


def test_follow_ends_with_one_error_line_when_a_file_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file truncated under --follow is an error line and status 2, not a traceback."""
    file = one_point_log(tmp_path)
    _follow_with(monkeypatch, [lambda: file.write_bytes(b"")])
    assert run_cli(["logs", "show", str(tmp_path), "loss", "--follow"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("stoker logs: error: ")
    assert "shorter than the saved position" in line


_UNDATED = [1e300, float("nan"), float("inf"), -1e20, 1e12]  # no datetime holds them


def _undated_log(directory: Path) -> Path:
    """A run whose loss points at odd steps have wall times that are not dates."""
    with SummaryWriter(str(directory / "a")) as writer:
        for step in range(10):
            wall = _UNDATED[step // 2] if step % 2 else 1000.0 + step
            writer.add_scalar("loss", float(step), step, walltime=wall)
    return directory


@pytest.mark.parametrize("run", [[], ["--run", "a"]])
def test_show_leaves_out_points_whose_wall_time_is_not_a_date_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], run: list[str]
) -> None:
    """``show`` draws and lists the dated points and warns once about the undated ones.

    ``show`` draws and lists the dated points and warns once, naming the run and the tag, about
    the five whose wall time is 1e300, nan, inf, -1e20 or year 33658 (the table printed them as
    numbers in the date column).
    """
    logdir = _undated_log(tmp_path)
    assert run_cli(["logs", "show", str(logdir), "loss", "--all", *run]) == 0
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("stoker logs: warning: run 'a' tag 'loss': 5 point(s)")
    assert "1e+300" in line
    lines = captured.out.splitlines()
    assert lines[0] == "tag loss: 5 points"
    start = next(index for index, text in enumerate(lines) if text.startswith("STEP"))
    rows = [text.split() for text in lines[start + 1 :]]
    assert [row[0] for row in rows] == ["0", "2", "4", "6", "8"]
    assert all(row[1].startswith("1970-01-01T00:16:") for row in rows)


def test_follow_warns_once_about_the_same_undated_points_at_every_redraw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--follow reports undated points in one warning line at Ctrl-C, not one per redraw.

    --follow redraws when a point arrives; the undated points it meets again are reported in
    one warning line at Ctrl-C, not one per redraw.
    """
    logdir = _undated_log(tmp_path)

    def more() -> None:
        with SummaryWriter(str(logdir / "a")) as writer:
            writer.add_scalar("loss", 1.0, 10)

    _follow_with(monkeypatch, [more])
    assert run_cli(["logs", "show", str(logdir), "loss", "--follow"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("tag loss:") == 2  # drawn, then redrawn with the new point
    (line,) = captured.err.splitlines()
    assert "run 'a' tag 'loss': 5 point(s)" in line


# read by worker processes: tests/integration/cli/test_cli_logs_processes.py
@pytest.mark.parametrize("workers", ["in-process"])
def test_a_run_removed_while_the_log_dir_is_read_is_a_warning_line(
    large: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], workers: str
) -> None:
    """`logs ls` lists the other runs when one is removed just before it is read."""
    check_run_removed_while_read(large, monkeypatch, capsys, workers)
