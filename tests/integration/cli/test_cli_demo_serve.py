"""`stoker demo --tensorboard`: serves on 127.0.0.1 and ends TensorBoard on every way out."""

from __future__ import annotations

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


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "code"),
    [(signal.SIGINT, 0), (signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGHUP, 128 + 1)],
)
def test_demo_tensorboard_ends_what_it_started(tmp_path: Path, sig: int, code: int) -> None:
    """Ctrl-C, SIGTERM and SIGHUP each stop the demo and TensorBoard and its data server."""
    port = tb_server.free_port()
    command = [
        sys.executable, "-m", "stoker.cli", "demo", "--epochs", "1", "--samples", "200",
        "--workers", "0", "--logdir", str(tmp_path / "run"), "--tensorboard", "--port", str(port),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    children: set[int] = set()
    try:
        base = f"http://127.0.0.1:{port}"
        runs = tb_server.poll(lambda: tb_server.get_json(base, "/data/runs"), lambda r: "." in r)
        assert runs is not None
        assert "." in runs
        children = _descendants(process.pid)
        assert children, "TensorBoard should run below the demo"
    finally:
        process.send_signal(sig)
        out, err = process.communicate(timeout=60)
    assert process.returncode == code, err[-2000:]
    assert f"http://127.0.0.1:{port}/" in out
    assert "Traceback" not in err
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in children if _alive(pid)], "TensorBoard outlived the demo"
    with pytest.raises(OSError, match=r"refused|reset|closed"):
        tb_server.get(base, "/data/runs")
