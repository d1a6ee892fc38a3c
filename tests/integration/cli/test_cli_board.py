"""`stoker board` as a user runs it: the URL line, every way out, errors, and what it passes on.

Each test runs the real command (and so a real TensorBoard) in a session of its own, reads its
output as it comes, and checks through /proc that no TensorBoard outlives it.
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import tb_server

from stoker.tensorboard import SummaryWriter

pytestmark = pytest.mark.slow

READY = 120.0  # TensorBoard's imports take seconds on a busy machine
GONE = 30.0  # how long a stopped TensorBoard may take to go
URL_LINE = re.compile(r"TensorBoard at http://127\.0\.0\.1:(\d+)/ \(Ctrl-C stops it\)")
BANNERS = ("TensorFlow installation not found", "(Press CTRL+C to quit)")


def _write_run(logdir: Path, points: int = 10) -> Path:
    """Write a run with a ``loss`` scalar of ``points`` steps into ``logdir``; return its file."""
    with SummaryWriter(str(logdir)) as writer:
        for step in range(points):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
    (event_file,) = logdir.glob("events.out.tfevents.*")
    return event_file


def _processes() -> dict[int, tuple[str, int, int, bytes]]:
    """Every process: pid -> (state, parent, session, command line)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            found[int(entry)] = (stat[0], int(stat[1]), int(stat[3]), cmdline)
    return found


def _live_in_session(session: int) -> list[int]:
    """The processes of ``session`` that have not ended (a zombie has ended)."""
    return [
        pid for pid, (state, _, sid, _) in _processes().items() if sid == session and state != "Z"
    ]


def _assert_gone(session: int) -> None:
    """Wait (bounded) until nothing of TensorBoard's session ``session`` runs."""
    deadline = time.monotonic() + GONE
    while _live_in_session(session) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _live_in_session(session), f"TensorBoard (session {session}) outlived stoker board"


def _assert_no_process_with(text: str) -> None:
    """Wait (bounded) until no process has ``text`` in its command line."""
    deadline = time.monotonic() + GONE

    def left() -> list[int]:
        found = _processes().items()
        return [pid for pid, (state, _, _, cmd) in found if text.encode() in cmd and state != "Z"]

    while left() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left(), left()


class _Board:
    """Run ``stoker board ARGS`` in a session of its own, reading its output as it comes.

    ``stoker board ARGS`` in a session of its own, its stdout and stderr read as they come,
    on pipes or on one pseudo-terminal; on leaving, it and its TensorBoard are killed if still
    running, and reaped.
    """

    def __init__(self, *args: str, terminal: bool = False, python: list[str] | None = None):
        command = [*(python or [sys.executable, "-m", "stoker.cli"]), "board", *args]
        self._lock = threading.Lock()
        self._text = {"out": b"", "err": b""}
        self.sessions: set[int] = set()
        if terminal:
            master, slave = pty.openpty()
            self.process = subprocess.Popen(
                command, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
            )
            os.close(slave)
            self._readers = [self._reader("out", master)]
        else:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            assert self.process.stdout is not None
            assert self.process.stderr is not None
            self._readers = [
                self._reader("out", self.process.stdout.fileno()),
                self._reader("err", self.process.stderr.fileno()),
            ]

    def _reader(self, name: str, fd: int) -> threading.Thread:
        def read() -> None:
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # a pseudo-terminal whose other side is closed (EIO)
                    chunk = b""
                if not chunk:
                    break
                with self._lock:
                    self._text[name] += chunk
            if name == "out" and self.process.stdout is None:
                os.close(fd)  # the pseudo-terminal's master

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        return thread

    def text(self, name: str = "out") -> str:
        with self._lock:
            return self._text[name].decode()

    def wait_for(self, pattern: str, name: str = "out", timeout: float = READY) -> re.Match[str]:
        """Wait until ``pattern`` shows in the output; fail if the command ends first."""
        deadline = time.monotonic() + timeout
        while (found := re.search(pattern, self.text(name))) is None:
            if self.process.poll() is not None or time.monotonic() > deadline:
                time.sleep(0.5)  # what it wrote last, for the message
                raise AssertionError(
                    f"no {pattern!r} (status {self.process.returncode}); "
                    f"stdout {self.text('out')!r}, stderr {self.text('err')!r}"
                )
            time.sleep(0.05)
        return found

    def url(self) -> str:
        """Wait for the URL line; return the page's base URL (no trailing slash)."""
        port = self.wait_for(URL_LINE.pattern).group(1)
        return f"http://127.0.0.1:{port}"

    def tensorboard(self) -> int:
        """Wait until stoker board has started TensorBoard; return its session's id (its pid)."""
        deadline = time.monotonic() + READY
        while time.monotonic() < deadline:
            for pid, (_, parent, session, cmdline) in _processes().items():
                if parent == self.process.pid and b"tensorboard.main" in cmdline:
                    self.sessions.add(session)
                    assert session == pid, "TensorBoard should lead a session of its own"
                    return session
            time.sleep(0.05)
        raise AssertionError("stoker board started no TensorBoard")

    def finish(self, timeout: float = 60) -> int:
        """Wait until it ends and its output is read; return its exit status."""
        code = self.process.wait(timeout=timeout)
        for thread in self._readers:
            thread.join(timeout=GONE)
        return code

    def close(self) -> None:
        for session in self.sessions:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(session, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=GONE)
        for thread in self._readers:
            thread.join(timeout=GONE)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


@contextlib.contextmanager
def _board(*args: str, terminal: bool = False, python: list[str] | None = None) -> Iterator[_Board]:
    board = _Board(*args, terminal=terminal, python=python)
    try:
        yield board
    finally:
        board.close()


def _port() -> str:
    return str(tb_server.free_port())


def _get_json(base: str, path: str, **query: str) -> object:
    return tb_server.get_json(base, path, **query)


@pytest.mark.parametrize(
    ("sig", "code"),
    [(signal.SIGINT, 0), (signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGHUP, 128 + 1)],
)
def test_board_serves_then_ends_tensorboard_on_every_signal(
    tmp_path: Path, sig: int, code: int
) -> None:
    """On pipes: the URL line comes once the page answers; each signal ends it with its status.

    On pipes: the URL line on stdout once the page answers with the runs; Ctrl-C (SIGINT to
    the process group, as a terminal sends it) exits 0, SIGTERM 143, SIGHUP 129; TensorBoard's
    session ends each time, and its banner lines never reach stderr.
    """
    _write_run(tmp_path / "a")
    with _board(str(tmp_path), "--port", _port()) as board:
        session = board.tensorboard()
        base = board.url()
        assert _get_json(base, "/data/runs") == ["a"]
        points = _get_json(base, "/data/plugin/scalars/scalars", run="a", tag="loss")
        assert [step for _, step, _ in points] == list(range(10))  # type: ignore[attr-defined]
        os.killpg(board.process.pid, sig)
        assert board.finish() == code, board.text("err")
    _assert_gone(session)
    assert board.text() == f"TensorBoard at {base}/ (Ctrl-C stops it)\n"
    err = board.text("err")
    assert f"stoker board: read 1 run of {tmp_path} in " in err
    assert not [line for line in err.splitlines() if any(b in line for b in BANNERS)], err
    assert "Traceback" not in err
    assert "caught SIGTERM" not in err  # stoker board's own stop, not news to the user
    with pytest.raises(OSError, match=r"refused|reset|closed"):
        tb_server.get(base, "/data/runs")


def test_board_on_a_terminal_prints_two_clean_lines(tmp_path: Path) -> None:
    """On a pseudo-terminal: only the reading line and the URL line; Ctrl-C ends it with status 0.

    On a pseudo-terminal (stdin, stdout and stderr): exactly the reading line and the URL
    line, nothing of TensorBoard's banners, no escape codes; Ctrl-C ends it with status 0.
    """
    _write_run(tmp_path / "a")
    with _board(str(tmp_path), "--port", _port(), terminal=True) as board:
        session = board.tensorboard()
        base = board.url()
        assert _get_json(base, "/data/runs") == ["a"]
        os.killpg(board.process.pid, signal.SIGINT)
        assert board.finish() == 0, board.text()
    _assert_gone(session)
    lines = board.text().split("\r\n")
    assert lines[-1] == ""
    assert re.fullmatch(
        rf"stoker board: read 1 run of {re.escape(str(tmp_path))} in \d+\.\d s", lines[0]
    )
    assert lines[1:] == [f"TensorBoard at {base}/ (Ctrl-C stops it)", ""]


def test_board_forwards_tensorboards_other_stderr_lines_as_they_come(tmp_path: Path) -> None:
    """TensorBoard's own warnings reach stderr as they are written, in order and once.

    TensorBoard's own warnings (a 404 here) reach stderr while it serves, each as soon as it
    is written, in order and once; only the two banner lines are left out.
    """
    _write_run(tmp_path / "a")
    with _board(str(tmp_path), "--port", _port()) as board:
        session = board.tensorboard()
        base = board.url()
        for name in ("first", "second", "third"):
            with pytest.raises(OSError, match="404"):
                tb_server.get(base, f"/no-such-page-{name}")
            board.wait_for(rf"path /no-such-page-{name} not found", "err", timeout=GONE)
        os.killpg(board.process.pid, signal.SIGINT)
        assert board.finish() == 0
    _assert_gone(session)
    err = board.text("err")
    found = re.findall(r"path /no-such-page-(\w+) not found", err)
    assert found == ["first", "second", "third"], err
    assert not [line for line in err.splitlines() if any(b in line for b in BANNERS)], err


def test_board_killed_outright_takes_tensorboard_with_it(tmp_path: Path) -> None:
    """After SIGKILL of stoker board, TensorBoard ends by itself.

    SIGKILL of stoker board leaves no clean-up to do, yet TensorBoard ends by itself (Linux
    sends it SIGTERM when its parent dies).
    """
    _write_run(tmp_path / "a")
    with _board(str(tmp_path), "--port", _port()) as board:
        session = board.tensorboard()
        board.url()
        board.process.kill()
        assert board.finish() == -signal.SIGKILL
        _assert_gone(session)


@pytest.mark.parametrize("listening", [True, False], ids=["listening", "bound"])
def test_board_on_a_taken_port_says_so_in_one_line(tmp_path: Path, listening: bool) -> None:
    """A port held by another program is refused before anything starts.

    A port held by another program (listening, or only bound) is refused before anything
    starts: one line naming the address, status 1, no URL line, no TensorBoard.
    """
    _write_run(tmp_path / "a")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        if listening:
            held.listen()
        port = held.getsockname()[1]
        with _board(str(tmp_path), "--port", str(port)) as board:
            assert board.finish() == 1
    assert board.text() == ""
    assert board.text("err") == (
        f"stoker board: TensorBoard cannot listen on 127.0.0.1:{port}: Address already in use; "
        "stop what uses that port or pick another with --port\n"
    )
    _assert_no_process_with(str(tmp_path))


def test_board_reports_tensorboard_exiting_at_start(tmp_path: Path) -> None:
    """TensorBoard refusing its flags: its error is forwarded and its status is stoker board's.

    TensorBoard refusing its flags: its own error is forwarded, then one line of stoker
    board's with TensorBoard's status, which is stoker board's; nothing is left running.
    """
    _write_run(tmp_path / "a")
    with _board(str(tmp_path), "--port", _port(), "--", "--no_such_flag") as board:
        session = board.tensorboard()
        assert board.finish() == 2
    _assert_gone(session)
    assert board.text() == ""
    err = board.text("err").splitlines()
    assert "unrecognized arguments: --no_such_flag" in "\n".join(err)
    assert err[-1] == "stoker board: tensorboard exited with status 2"


def test_board_on_a_missing_log_dir_says_which(tmp_path: Path) -> None:
    """A log dir that does not exist: status 2, one line naming the path, nothing left."""
    missing = tmp_path / "no such dir"
    with _board(str(missing), "--port", _port()) as board:
        assert board.finish() == 2
    err = board.text("err")
    assert len(err.splitlines()) == 1, err
    assert err.startswith("stoker board: "), err
    assert repr(str(missing)) in err, err
    assert board.text() == ""
    _assert_no_process_with(str(missing))


def _refused(*args: str) -> str:
    """Run ``stoker board ARGS`` expecting a refusal: status 2, nothing on stdout; its stderr."""
    result = subprocess.run(
        [sys.executable, "-m", "stoker.cli", "board", *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result
    assert result.stdout == ""
    return result.stderr


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--port", "0", "an integer from 1 to 65535"),
        ("--port", "70000", "an integer from 1 to 65535"),
        ("--reload-interval", "-1", "a number in [0, 86400]"),
        ("--reload-interval", "nan", "a number in [0, 86400]"),
    ],
)
def test_board_refuses_bad_option_values(
    tmp_path: Path, option: str, value: str, expected: str
) -> None:
    """A bad --port or --reload-interval: argparse's one line naming option and value, status 2."""
    assert _refused(str(tmp_path), option, value) == (
        f"stoker board: error: argument {option}: must be {expected}, got {value!r}; "
        "see `stoker board --help`\n"
    )


def test_board_data_server_only_feeds_a_tensorboard_started_apart(tmp_path: Path) -> None:
    """--data-server-only prints the flag for a TensorBoard, which then shows the runs.

    --data-server-only prints the flag for TensorBoard; a TensorBoard given it shows the runs;
    Ctrl-C ends the data server with status 0.
    """
    _write_run(tmp_path / "a")
    _write_run(tmp_path / "b", points=3)
    with _board(str(tmp_path), "--data-server-only") as board:
        flag = board.wait_for(r"--grpc_data_provider=127\.0\.0\.1:\d+\n").group(0).strip()
        assert board.text() == flag + "\n"
        with tb_server.serve_flags([flag]) as base:
            runs = tb_server.poll(lambda: _get_json(base, "/data/runs"), lambda r: len(r) == 2)
            assert runs == ["a", "b"]
            points = _get_json(base, "/data/plugin/scalars/scalars", run="b", tag="loss")
            assert [step for _, step, _ in points] == [0, 1, 2]  # type: ignore[attr-defined]
        os.killpg(board.process.pid, signal.SIGINT)
        assert board.finish() == 0, board.text("err")
    assert "Traceback" not in board.text("err")


def test_board_passes_flags_after_double_dash_to_tensorboard(tmp_path: Path) -> None:
    """`-- --samples_per_plugin scalars=3` reaches TensorBoard: a 10-point tag shows 3 points.

    `-- --samples_per_plugin scalars=3` reaches TensorBoard: a 10-point tag shows 3 points,
    the last among them.
    """
    _write_run(tmp_path / "a")
    with _board(
        str(tmp_path), "--port", _port(), "--", "--samples_per_plugin", "scalars=3"
    ) as board:
        session = board.tensorboard()
        base = board.url()
        points = _get_json(base, "/data/plugin/scalars/scalars", run="a", tag="loss")
        steps = [step for _, step, _ in points]  # type: ignore[attr-defined]
        assert 0 < len(steps) <= 3, steps
        assert steps[-1] == 9
        os.killpg(board.process.pid, signal.SIGINT)
        assert board.finish() == 0
    _assert_gone(session)


@pytest.mark.parametrize("flag", [["--path_prefix=/tb/"], ["--path_prefix", "/tb"]])
def test_board_url_line_has_tensorboards_path_prefix(tmp_path: Path, flag: list[str]) -> None:
    """`-- --path_prefix /tb`: the page is awaited, and shown, under the prefix."""
    _write_run(tmp_path / "a")
    with _board(str(tmp_path), "--port", _port(), "--", *flag) as board:
        session = board.tensorboard()
        base = board.wait_for(r"TensorBoard at (http://127\.0\.0\.1:\d+/tb)/ \(Ctrl-C").group(1)
        assert _get_json(base, "/data/runs") == ["a"]
        os.killpg(board.process.pid, signal.SIGINT)
        assert board.finish() == 0
    _assert_gone(session)


@pytest.mark.parametrize("command", ["board", "demo"])
def test_board_without_tensorboard_names_the_extra(tmp_path: Path, command: str) -> None:
    """Without tensorboard, `stoker board` and `stoker demo --tensorboard` name the extra needed.

    With the tensorboard package not importable (``sys.modules['tensorboard'] = None``,
    which makes ``find_spec`` answer None and ``import`` fail), `stoker board` and
    `stoker demo --tensorboard` say which extra to install, in one line, and exit 2.
    """
    _write_run(tmp_path / "a")
    code = (
        "import sys; sys.modules['tensorboard'] = None; from stoker.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    args = {
        "board": ["board", str(tmp_path)],
        "demo": ["demo", "--epochs", "1", "--samples", "200", "--workers", "0",
                 "--logdir", str(tmp_path / "demo"), "--tensorboard"],
    }[command]  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr == (
        f"stoker {command}: needs the tensorboard package (and grpcio, which it brings); "
        "install it with `pip install 'stoker[tensorboard]'`\n"
    )


def test_board_on_one_event_file_shows_one_run_named_dot(tmp_path: Path) -> None:
    """An event file given as LOGDIR is one run, ".", with its scalars."""
    event_file = _write_run(tmp_path / "a")
    with _board(str(event_file), "--port", _port()) as board:
        session = board.tensorboard()
        base = board.url()
        assert _get_json(base, "/data/runs") == ["."]
        points = _get_json(base, "/data/plugin/scalars/scalars", run=".", tag="loss")
        assert len(points) == 10  # type: ignore[arg-type]
        os.killpg(board.process.pid, signal.SIGINT)
        assert board.finish() == 0
    _assert_gone(session)
    assert "Traceback" not in board.text("err")


def test_board_on_an_empty_dir_still_serves_the_page(tmp_path: Path) -> None:
    """An empty log dir: the page comes up with no runs (and fills as runs appear)."""
    with _board(str(tmp_path), "--port", _port(), "--reload-interval", "1") as board:
        session = board.tensorboard()
        base = board.url()
        assert _get_json(base, "/data/runs") == []
        assert b"<html" in tb_server.get(base, "/").lower()
        _write_run(tmp_path / "late")
        runs = tb_server.poll(lambda: _get_json(base, "/data/runs"), lambda r: r == ["late"])
        assert runs == ["late"]
        os.killpg(board.process.pid, signal.SIGINT)
        assert board.finish() == 0
    _assert_gone(session)
    assert "stoker board: read 0 runs of " in board.text("err")


def test_board_on_a_path_with_spaces_and_unicode(tmp_path: Path) -> None:
    """A log dir whose path has spaces and non-ASCII letters is read and served as any other."""
    logdir = tmp_path / "my runs" / "ünïcødé ✓"
    _write_run(logdir / "ñ run")
    with _board(str(logdir), "--port", _port()) as board:
        session = board.tensorboard()
        base = board.url()
        assert _get_json(base, "/data/runs") == ["ñ run"]
        points = _get_json(base, "/data/plugin/scalars/scalars", run="ñ run", tag="loss")
        assert len(points) == 10  # type: ignore[arg-type]
        os.killpg(board.process.pid, signal.SIGINT)
        assert board.finish() == 0
    _assert_gone(session)
    assert f"stoker board: read 1 run of {logdir} in " in board.text("err")


@pytest.mark.parametrize(
    ("flags", "advice"),
    [
        (["--port", "6010"], "give --port before --"),
        (["--port=6010"], "give --port before --"),
        (["--host", "0.0.0.0"], "give --host before --"),
        (["--bind_all"], "give --host 0.0.0.0 before --"),
        (["--logdir", "elsewhere"], "give the log dir as stoker board's LOGDIR"),
        (["--grpc_data_provider=127.0.0.1:1"], "stoker board starts its own data server"),
    ],
)
def test_board_refuses_its_own_flags_after_double_dash(
    tmp_path: Path, flags: list[str], advice: str
) -> None:
    """A flag stoker board gives TensorBoard itself, repeated after --, is refused with status 2.

    A flag stoker board gives TensorBoard itself, repeated after --: one line naming it and
    what to do instead, status 2, nothing started (TensorBoard would take the later one, and the
    page would be awaited where it is not).
    """
    assert _refused(str(tmp_path), "--", *flags) == (
        f"stoker board: {flags[0]!r} after -- is a flag stoker board gives TensorBoard itself: "
        f"{advice}\n"
    )
    _assert_no_process_with(str(tmp_path))


def test_board_data_server_only_refuses_flags_for_tensorboard(tmp_path: Path) -> None:
    """--data-server-only starts no TensorBoard: flags after -- are an error, not ignored."""
    flags = ["--", "--samples_per_plugin", "scalars=3"]
    assert _refused(str(tmp_path), "--data-server-only", *flags) == (
        "stoker board: flags after -- go to TensorBoard, which --data-server-only does not start "
        "(got '--samples_per_plugin scalars=3'); give them to your tensorboard\n"
    )


_THREADS_AT_READ = """
import os, signal, sys, threading
from stoker.cli import _board
from stoker.tensorboard._read import reader

original = reader.worker_count

def counted(workers, runs):
    if not hasattr(counted, "threads"):  # the first read: the command's
        counted.threads = threading.active_count()
        print(f"threads at the read: {counted.threads}", flush=True)
        os.kill(os.getpid(), signal.SIGTERM)  # ends serve() once the read is done
    return original(workers, runs)

reader.worker_count = counted
sys.exit(_board.serve(sys.argv[1], port=int(sys.argv[2]), reload_interval=0))
"""


def test_board_reads_the_log_dir_from_a_one_thread_process(tmp_path: Path) -> None:
    """The log dir is read while this process has one thread, so the reader may fork workers.

    The reader reads a large log dir with one forked process per core, but only in a process
    with no other thread; the thread forwarding TensorBoard's stderr starts after the read
    (it used to start before, and every ``stoker board`` read in one process).
    """
    _write_run(tmp_path / "a")
    _write_run(tmp_path / "b")
    result = subprocess.run(
        [sys.executable, "-c", _THREADS_AT_READ, str(tmp_path), _port()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "threads at the read: 1\n" in result.stdout, (result.stdout, result.stderr)
    assert result.returncode == 128 + signal.SIGTERM, result.stderr
    assert "Traceback" not in result.stderr
