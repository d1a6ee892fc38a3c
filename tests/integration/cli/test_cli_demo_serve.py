"""`stoker demo --tensorboard`: serves its logs as `stoker board` does, and ends TensorBoard.

`stoker demo --tensorboard`: serves its logs as `stoker board` does, on 127.0.0.1, and ends
TensorBoard on every way out.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tb_server


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid``, found through /proc (TensorBoard and its data server)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _kill_tree(pid: int, known: set[int]) -> None:
    """SIGKILL the demo's process group and every process found below it.

    SIGKILL the demo's process group and every process found below it (TensorBoard runs in
    a session of its own), so a demo that did not stop in time is this test's failure alone:
    the `with` block can then reap it and close its pipes.
    """
    below = known | _descendants(pid)  # before the kill: orphans no longer show below it
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    for child in below:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "code"),
    [(signal.SIGINT, 0), (signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGHUP, 128 + 1)],
)
def test_demo_tensorboard_ends_what_it_started(tmp_path: Path, sig: int, code: int) -> None:
    """The demo serves on stoker's data server; Ctrl-C, SIGTERM and SIGHUP end it and TensorBoard.

    The demo's closing hint names `stoker board`; its URL line comes once TensorBoard on
    stoker's data server answers; Ctrl-C, SIGTERM and SIGHUP each stop the demo and TensorBoard.
    """
    port = tb_server.free_port()
    command = [
        sys.executable, "-m", "stoker.cli", "demo", "--epochs", "1", "--samples", "200",
        "--workers", "0", "--logdir", str(tmp_path / "run"), "--tensorboard", "--port", str(port),
    ]  # fmt: skip
    children: set[int] = set()
    base = f"http://127.0.0.1:{port}"
    url_line = f"TensorBoard at {base}/ (Ctrl-C stops it)\n"
    # Files, not pipes: the URL line is awaited while the demo runs, with a deadline.
    stdout, stderr = tmp_path / "stdout", tmp_path / "stderr"
    with (
        stdout.open("w") as out_file,
        stderr.open("w") as err_file,
        subprocess.Popen(
            command, stdout=out_file, stderr=err_file, start_new_session=True
        ) as process,
    ):
        try:
            runs = tb_server.poll(
                lambda: tb_server.get_json(base, "/data/runs"), lambda r: "." in r
            )
            assert runs is not None
            assert "." in runs
            children = _descendants(process.pid)
            assert children, "TensorBoard should run below the demo"
            shown = tb_server.poll(stdout.read_text, lambda text: url_line in text)
            assert url_line in shown
        finally:
            process.send_signal(sig)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                _kill_tree(process.pid, children)
                raise
    out, err = stdout.read_text(), stderr.read_text()
    assert process.returncode == code, err[-2000:]
    logdir = tmp_path / "run"
    assert f"view them: stoker board {logdir}\n" in out
    assert out.endswith(url_line)
    assert "Traceback" not in err
    assert "(Press CTRL+C to quit)" not in err
    assert f"stoker demo: read 2 runs of {logdir} in " in err
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in children if _alive(pid)], "TensorBoard outlived the demo"
    with pytest.raises(OSError, match=r"refused|reset|closed"):
        tb_server.get(base, "/data/runs")
