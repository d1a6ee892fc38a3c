"""`stoker logs` with processes: the command on a terminal, and runs read by worker processes.

``show --follow`` and ``ls`` run as commands (on a pseudo-terminal, or with a FIFO in the log
dir); a large log dir is read by two reader worker processes: one killed, progress drawn on a
terminal, a run removed while it is read.
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import signal
import sys
from pathlib import Path

import pytest
from cli_logs_helpers import (
    check_run_removed_while_read,
    large_fixture,  # noqa: F401 - the fixture `large`, found by pytest in this module
    logs_subcommand,
    one_point_log,
    run_cli,
)
from tb_subprocess import read_until, run_on_terminal, wait_status

from stoker.tensorboard import SummaryWriter


def test_show_follow_redraws_on_a_terminal_and_ends_on_ctrl_c(tmp_path: Path) -> None:
    """--follow on a terminal redraws in place as points arrive; Ctrl-C exits 0, no traceback."""
    writer = SummaryWriter(str(tmp_path), flush_secs=1)
    for step in range(5):
        writer.add_scalar("loss", 1.0 / (step + 1), step)
    writer.flush()
    argv = [sys.executable, "-m", "stoker.cli", "logs", "show", str(tmp_path), "loss"]
    reaped = False
    pid, fd = pty.fork()
    if pid == 0:  # the child: stoker on the pseudo-terminal, as a user's shell would run it
        os.environ["COLUMNS"] = "70"
        os.execv(sys.executable, [*argv, "--follow", "--interval", "0.1", "--rows", "3"])
    try:
        first = read_until(fd, b"5 points", 30)
        assert b"tag loss: 5 points" in first
        assert b"\x1b[H\x1b[2J" in first  # drawn in place: cursor home and clear
        assert any(0x2800 <= ord(ch) <= 0x28FF for ch in first.decode(errors="replace"))
        for step in range(5, 9):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
        writer.flush()
        later = read_until(fd, b"9 points", 30)
        assert b"tag loss: 9 points" in later
        os.write(fd, b"\x03")  # Ctrl-C, through the terminal's line discipline
        rest = read_until(fd, b"\x00never", 5)
        status = wait_status(pid, 30)
        assert status is not None, f"stoker logs show --follow ({pid}) did not end 30 s after ^C"
        reaped = True
    finally:
        writer.close()
        if not reaped:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        os.close(fd)
    assert os.WIFEXITED(status), f"ended by signal {os.WTERMSIG(status)}"
    assert os.WEXITSTATUS(status) == 0
    assert b"Traceback" not in rest


def test_ls_skips_a_fifo_named_like_an_event_file_instead_of_blocking(tmp_path: Path) -> None:
    """`logs ls` on a dir holding a FIFO named *tfevents* lists the rest and warns (it blocked)."""
    import subprocess

    one_point_log(tmp_path)
    os.mkfifo(tmp_path / "events.out.tfevents.0.fifo")
    done = subprocess.run(
        [sys.executable, "-m", "stoker.cli", "logs", "ls", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "loss" in done.stdout
    (line,) = done.stderr.splitlines()
    assert line.startswith("stoker logs: warning: ")
    assert "it is a FIFO, not a regular file" in line


@pytest.mark.parametrize("command", ["ls", "show", "export", "plot"])
def test_a_killed_reader_worker_is_one_error_line_and_status_2(
    large: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    """A reader worker SIGKILLed is one line on stderr and status 2, not a traceback.

    A reader worker SIGKILLed (as by the OOM killer) is one line on stderr naming the worker,
    the signal and the run it held, and status 2; it was a BrokenProcessPool traceback.
    """
    from stoker.tensorboard._read.run import RunData

    parent = os.getpid()
    original = RunData.load

    def load(self: RunData) -> int:
        if os.getpid() != parent and self.name == "run2":
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self)

    monkeypatch.setattr(RunData, "load", load)
    assert run_cli(logs_subcommand(command, str(large), tmp_path / "x.png", run="run0")) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("stoker logs: error: reader worker "), line
    assert "killed by signal SIGKILL" in line
    assert "'run2'" in line


# `stoker logs` with a lowered threshold: any log dir is "large", read by two workers.
_LARGE_LOG_CLI = """
import os, sys
import stoker.cli._logs as logs
from stoker.tensorboard._read import parallel, reader
parallel.PARALLEL_MIN_BYTES = 1
parallel.usable_cpu_count = lambda: 2
logs._PROGRESS_AFTER = 0.0
def load_runs(runs, workers, original=reader.load_runs):
    with open(os.environ["WORKERS_SEEN"], "a") as seen:
        seen.write(f"{workers}\\n")
    return original(runs, workers)
reader.load_runs = load_runs
from stoker.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls", b"run3"),
        ("show", b"tag loss: 20 points"),
        ("export", b"run3,loss,19,"),
        ("plot", b"wrote 1 chart(s) of 4 run(s)"),
    ],
)
def test_a_large_log_dir_read_on_a_terminal_by_workers_shows_progress(
    large: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, expected: bytes
) -> None:
    """`stoker logs` on a terminal with worker processes shows progress and exits 0.

    `stoker logs` on a terminal over a log dir read by worker processes prints its output,
    shows reading progress (the workers' calls, drawn by the command) and exits 0; the runs
    coming back held the progress callback and its sys.stderr: a TypeError traceback.
    """
    seen = tmp_path / "workers"
    monkeypatch.setenv("WORKERS_SEEN", str(seen))
    monkeypatch.setenv("COLUMNS", "100")
    argv = logs_subcommand(command, str(large), tmp_path / "x.png", run="run3")
    status, output = run_on_terminal([sys.executable, "-c", _LARGE_LOG_CLI, *argv])
    assert b"Traceback" not in output, output.decode(errors="replace")
    assert os.WIFEXITED(status), f"ended by signal {os.WTERMSIG(status)}"
    assert os.WEXITSTATUS(status) == 0, output.decode(errors="replace")
    assert seen.read_text().split() == ["2"]  # two workers read it
    assert expected in output
    assert re.search(rb"stoker logs: reading \S+/logs/run\d/\S*tfevents\S*: 0 of 0 MiB", output)


@pytest.mark.parametrize("workers", ["workers"])
def test_a_run_removed_while_the_log_dir_is_read_is_a_warning_line(
    large: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], workers: str
) -> None:
    """`logs ls` lists the other runs when one is removed just before it is read."""
    check_run_removed_while_read(large, monkeypatch, capsys, workers)
