"""The event file writer: naming, flushing, exit and fork safety, purge_step, bad input."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import stoker.tensorboard as stb
from stoker.tensorboard import _messages as pb
from stoker.tensorboard import _messages_plugins as plugin_pb
from stoker.tensorboard import _record

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def read_events(path: Path) -> list[dict[str, Any]]:
    """Decode every event of one file with stoker's own record reader."""
    with open(path, "rb") as stream:
        return [pb.EVENT.decode(data) for data in _record.iter_records(stream)]


def scalar_steps(path: Path, tag: str = "x") -> list[int]:
    """Return the steps of the simple-value scalars tagged ``tag`` in one file."""
    steps = []
    for event in read_events(path):
        for value in event.get("summary", {}).get("value", []):
            if value["tag"] == tag:
                steps.append(event.get("step", 0))
    return steps


def only_file(logdir: Path) -> Path:
    """Return the single event file directly in ``logdir``."""
    (path,) = logdir.glob("events.out.tfevents.*")
    return path


def test_file_name_and_first_record(tmp_path: Path) -> None:
    """Files are named like TensorBoard's writer names them and start with brain.Event:2."""
    before = int(time.time())
    with stb.SummaryWriter(tmp_path, filename_suffix=".v2") as first:
        second = stb.SummaryWriter(tmp_path, filename_suffix=".v2")
        second.close()
        assert first.get_logdir() == str(tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    pattern = re.compile(
        rf"events\.out\.tfevents\.(\d{{10}})\.{re.escape(socket.gethostname())}\."
        rf"{os.getpid()}\.(\d+)\.v2"
    )
    matches = [pattern.fullmatch(name) for name in names]
    assert all(matches), names
    assert len({m.group(2) for m in matches if m}) == 2
    assert all(before <= int(m.group(1)) <= time.time() for m in matches if m)
    first_event = read_events(tmp_path / names[0])[0]
    assert first_event["file_version"] == "brain.Event:2"
    assert first_event["wall_time"] >= before


def test_default_log_dir_follows_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without log_dir, runs/<date>_<host><comment> is used, as in torch."""
    monkeypatch.chdir(tmp_path)
    with stb.SummaryWriter(comment="_lr0.1") as writer:
        logdir = writer.get_logdir()
    assert re.fullmatch(
        rf"runs/[A-Z][a-z]{{2}}\d\d_\d\d-\d\d-\d\d_{re.escape(socket.gethostname())}_lr0\.1",
        logdir,
    )
    assert only_file(tmp_path / logdir)


def test_flush_returns_once_everything_is_in_the_file(tmp_path: Path) -> None:
    """After flush() every queued event is readable, without closing the writer."""
    writer = stb.SummaryWriter(tmp_path, max_queue=1000)
    for step in range(5000):
        writer.add_scalar("x", float(step), step)
    writer.flush()
    assert scalar_steps(only_file(tmp_path)) == list(range(5000))
    writer.close()


def test_events_reach_the_file_within_about_a_second(tmp_path: Path) -> None:
    """Without flush() or a full queue, the writer thread still writes within ~1 s."""
    writer = stb.SummaryWriter(tmp_path, max_queue=1000, flush_secs=120)
    writer.add_scalar("x", 1.0, 1)
    deadline = time.monotonic() + 5
    while not scalar_steps(only_file(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    waited = 5 - (deadline - time.monotonic())
    assert scalar_steps(only_file(tmp_path)) == [1]
    assert waited < 2.5
    writer.close()


_EXIT_SCRIPT = """
import sys
from stoker.tensorboard import SummaryWriter
writer = SummaryWriter(sys.argv[1], max_queue=100000)
for step in range(3000):
    writer.add_scalar("x", float(step), step)
if sys.argv[2] == "raise":
    raise RuntimeError("crash on purpose")
"""


@pytest.mark.parametrize("how", ["normal", "raise"])
def test_exit_without_close_loses_nothing(tmp_path: Path, how: str) -> None:
    """A normal exit or an uncaught exception without close() still writes every event."""
    result = subprocess.run(
        [sys.executable, "-c", _EXIT_SCRIPT, str(tmp_path), how],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == (1 if how == "raise" else 0), result.stderr
    assert scalar_steps(only_file(tmp_path)) == list(range(3000))


_KILL_SCRIPT = """
import sys, time
from stoker.tensorboard import SummaryWriter
writer = SummaryWriter(sys.argv[1], max_queue=100000)
for step in range(100):
    writer.add_scalar("x", float(step), step)
time.sleep(1.6)
print("ready", flush=True)
time.sleep(60)
"""


def test_sigkill_loses_at_most_the_last_second(tmp_path: Path) -> None:
    """Events added more than a flush interval before SIGKILL are in the file."""
    process = subprocess.Popen(
        [sys.executable, "-c", _KILL_SCRIPT, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
    finally:
        process.kill()
        process.wait(timeout=10)
        if process.stdout:
            process.stdout.close()
    assert scalar_steps(only_file(tmp_path)) == list(range(100))


def test_queue_is_bounded_when_the_disk_is_slow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a slow disk, callers wait instead of queueing without limit; nothing is lost."""
    from stoker.tensorboard import _event_file

    real_write = _event_file._write_all

    def slow_write(fd: int, data: bytes) -> None:
        time.sleep(0.005)
        real_write(fd, data)

    monkeypatch.setattr(_event_file, "_write_all", slow_write)
    writer = stb.SummaryWriter(tmp_path, max_queue=2)
    state = writer.file_writer.event_writer._state if writer.file_writer else None
    assert state is not None
    longest = 0
    for step in range(3000):
        writer.add_scalar("x", 1.0, step)
        longest = max(longest, len(state.pending))
    writer.close()
    assert 256 <= longest <= 2 * 256
    assert scalar_steps(only_file(tmp_path)) == list(range(3000))


def _wait_child(pid: int, timeout: float = 20.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError(f"forked child {pid} hung")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_writes_its_own_file_and_never_deadlocks(tmp_path: Path) -> None:
    """Children forked while another thread logs write their own files; the parent's is intact."""
    writer = stb.SummaryWriter(tmp_path, max_queue=50)
    stop = threading.Event()

    def hammer() -> None:
        step = 0
        while not stop.is_set():
            writer.add_scalar("x", 1.0, step)
            step += 1

    thread = threading.Thread(target=hammer)
    thread.start()
    children = []
    try:
        for child in range(4):
            time.sleep(0.02)
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child
                code = 1
                try:
                    for step in range(10):
                        writer.add_scalar(f"child{child}", float(step), step)
                    writer.close()
                    code = 0
                finally:
                    os._exit(code)
            children.append(pid)
        codes = [_wait_child(pid) for pid in children]
    finally:
        stop.set()
        thread.join(10)
    writer.close()
    assert codes == [0, 0, 0, 0]
    files = {int(p.name.split(".")[5]): p for p in tmp_path.glob("events.out.tfevents.*")}
    assert sorted(files) == sorted([os.getpid(), *children])
    for index, pid in enumerate(children):
        assert scalar_steps(files[pid], f"child{index}") == list(range(10))
        assert scalar_steps(files[pid], "x") == []
    parent_steps = scalar_steps(files[os.getpid()])
    assert parent_steps == list(range(len(parent_steps)))
    assert len(parent_steps) > 0


def test_purge_step_hides_old_points_in_python_loaders(tmp_path: Path) -> None:
    """Steps 0..99, then a restart at purge_step=50 writing 50..59: 60 points, each once."""
    from tensorboard.backend.event_processing import event_accumulator as legacy
    from tensorboard.backend.event_processing import plugin_event_accumulator as plugin

    with stb.SummaryWriter(tmp_path) as writer:
        for step in range(100):
            writer.add_scalar("x", float(step), step)
    time.sleep(1.05)  # a new file name second, as a restarted job would have
    with stb.SummaryWriter(tmp_path, purge_step=50) as writer:
        for step in range(50, 60):
            writer.add_scalar("x", step + 0.5, step)
    old = legacy.EventAccumulator(str(tmp_path), size_guidance={"scalars": 0})
    old.Reload()
    points = [(e.step, e.value) for e in old.Scalars("x")]
    assert points == [(s, float(s)) for s in range(50)] + [(s, s + 0.5) for s in range(50, 60)]
    new = plugin.EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    new.Reload()
    steps = [e.step for e in new.Tensors("x")]
    assert steps == list(range(60))


def test_closed_writer_reopens_on_the_next_add(tmp_path: Path) -> None:
    """As in torch, adding after close() opens a new event file; close() twice is harmless."""
    writer = stb.SummaryWriter(tmp_path)
    writer.add_scalar("x", 1.0, 1)
    writer.close()
    writer.close()
    writer.flush()
    writer.add_scalar("x", 2.0, 2)
    writer.close()
    files = sorted(tmp_path.glob("events.out.tfevents.*"), key=lambda p: int(p.name.split(".")[6]))
    assert [scalar_steps(p) for p in files] == [[1], [2]]


def _bad_calls() -> list[tuple[str, Any, type[Exception], str]]:
    image = np.zeros((3, 4, 4))
    return [
        ("add_scalar", (1, 1.0), TypeError, "tag must be a str"),
        ("add_scalar", ("", 1.0), ValueError, "tag must be a non-empty str"),
        ("add_scalar", ("x", "1.0"), TypeError, "scalar_value must be a number"),
        ("add_scalar", ("x", np.ones(3)), ValueError, "scalar_value must hold exactly one"),
        ("add_scalar", ("x", 1.0, "3"), TypeError, "global_step must be an int"),
        ("add_scalar", ("x", 1.0, 1.5), TypeError, "global_step must be an int"),
        ("add_scalars", ("g", [1, 2]), TypeError, "tag_scalar_dict must be a dict"),
        ("add_histogram", ("h", np.array([])), ValueError, "values must not be empty"),
        ("add_histogram", ("h", np.array([1.0, np.nan])), ValueError, "values must be finite"),
        ("add_histogram", ("h", np.array([1.0]), 0, "nope"), ValueError, "bins must be"),
        ("add_histogram", ("h", np.ones(3), 0, "tensorflow", None, 0), ValueError, "max_bins"),
        ("add_histogram_raw", ("h", 0, 1, 2, 1, 1, [1, 2], [1]), ValueError, "same length"),
        ("add_image", ("i", np.zeros((3, 4, 5)), 0, None, "HWC"), ValueError, "img_tensor"),
        ("add_image", ("i", image, 0, None, "CHWN"), ValueError, "dataformats"),
        ("add_image", ("i", np.zeros((3, 0, 4))), ValueError, "img_tensor"),
        ("add_image", ("i", np.full((3, 4, 4), np.nan)), ValueError, "img_tensor"),
        ("add_image_with_boxes", ("i", image, np.zeros((2, 3))), ValueError, "box_tensor"),
        (
            "add_image_with_boxes",
            ("i", image, np.zeros((2, 4)), 0, None, 1, "CHW", ["a"]),
            ValueError,
            "labels",
        ),
        ("add_video", ("v", np.zeros((1, 2, 3, 4))), ValueError, "vid_tensor"),
        ("add_audio", ("a", np.zeros((2, 10))), ValueError, "snd_tensor"),
        ("add_text", ("t", 5), TypeError, "text_string must be a str"),
        ("add_pr_curve", ("p", np.ones(3), np.ones(4) / 2), ValueError, "same number"),
        ("add_pr_curve", ("p", np.ones(3), np.full(3, 2.0)), ValueError, "predictions must"),
        ("add_pr_curve", ("p", np.ones(0), np.ones(0)), ValueError, "labels must not be empty"),
        ("add_pr_curve_raw", ("p", [1], [1], [1], [1], [1], [1, 2]), ValueError, "equal length"),
        ("add_custom_scalars", ({"c": {"t": ["Margin", ["a"]]}},), ValueError, "3 tags"),
        ("add_custom_scalars_marginchart", (["a", "b"],), ValueError, "exactly 3"),
        ("add_mesh", ("m", np.zeros((4, 3))), ValueError, "vertices must have shape"),
        ("add_tensor", ("t", np.array([object()])), TypeError, "tensor has dtype object"),
        ("add_hparams", ([("lr", 1)], {}), TypeError, "hparam_dict must be a dict"),
        ("add_hparams", ({"lr": [1]}, {}), ValueError, r"hparam_dict\['lr'\]"),
    ]


@pytest.mark.parametrize(
    ("method", "args", "error", "message"),
    _bad_calls(),
    ids=[f"{c[0]}-{i}" for i, c in enumerate(_bad_calls())],
)
def test_bad_input_raises_and_keeps_written_data(
    tmp_path: Path, method: str, args: Any, error: type[Exception], message: str
) -> None:
    """Bad input raises a TypeError/ValueError naming the argument; earlier data stays intact."""
    writer = stb.SummaryWriter(tmp_path)
    for step in range(3):
        writer.add_scalar("x", 1.0, step)
    with pytest.raises(error, match=message):
        getattr(writer, method)(*args)
    writer.add_scalar("x", 1.0, 3)
    writer.close()
    assert scalar_steps(only_file(tmp_path)) == [0, 1, 2, 3]
    assert len(read_events(only_file(tmp_path))) == 5


def test_writer_thread_failure_surfaces_instead_of_hanging(tmp_path: Path) -> None:
    """If writing fails (here: the file descriptor is gone), flush() raises RuntimeError fast."""
    writer = stb.FileWriter(tmp_path)
    state = writer.event_writer._state
    assert state.fd is not None
    os.close(state.fd)
    writer.add_event({"step": 1, "file_version": "x"})
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="failed"):
        writer.flush()
    assert time.monotonic() - started < 5
    with pytest.raises(RuntimeError, match="Bad file descriptor"):
        writer.close()
    writer.close()


def test_file_writer_accepts_protobuf_dicts_and_bytes(tmp_path: Path) -> None:
    """FileWriter takes events and summaries as protobuf objects, dicts or encoded bytes."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    writer = stb.FileWriter(tmp_path)
    proto = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="x", simple_value=1.0)])
    writer.add_summary(proto, 1, walltime=10.0)
    writer.add_summary({"value": [{"tag": "x", "simple_value": 2.0}]}, 2, walltime=11.0)
    writer.add_event(event_pb2.Event(step=3, summary=proto), walltime=12.0)
    writer.add_event(
        pb.EVENT.encode({"step": 4, "wall_time": 1.0, "summary": proto.SerializeToString()}),
        walltime=13.0,
    )
    writer.add_event(
        {"step": 5, "summary": {"value": [{"tag": "x", "simple_value": 3.0}]}}, 6, 14.0
    )
    writer.flush()
    assert writer.get_logdir() == str(tmp_path)
    writer.close()
    writer.reopen()
    writer.add_summary(proto, 7)
    writer.close()
    files = sorted(tmp_path.glob("events.out.tfevents.*"), key=lambda p: int(p.name.split(".")[6]))
    events = read_events(files[0])[1:]
    assert [(e["step"], e["wall_time"]) for e in events] == [
        (1, 10.0),
        (2, 11.0),
        (3, 12.0),
        (4, 13.0),
        (6, 14.0),
    ]
    assert scalar_steps(files[1]) == [7]
    with pytest.raises(TypeError, match="summary must be encoded bytes"):
        stb.FileWriter(tmp_path).add_summary(3.5)


def test_add_hparams_same_run_writes_into_this_run(tmp_path: Path) -> None:
    """same_run=True (a stoker addition) keeps the hparams summaries in the writer's own file."""
    with stb.SummaryWriter(tmp_path) as writer:
        writer.add_hparams({"lr": 0.1, "flag": True}, {"acc": 0.5}, same_run=True)
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == []
    tags = [
        value["tag"]
        for event in read_events(only_file(tmp_path))
        for value in event.get("summary", {}).get("value", [])
    ]
    assert tags == [
        "_hparams_/experiment",
        "_hparams_/session_start_info",
        "_hparams_/session_end_info",
        "acc",
    ]
    start = read_events(only_file(tmp_path))[2]["summary"]["value"][0]["metadata"]
    content = plugin_pb.HPARAMS_PLUGIN_DATA.decode(start["plugin_data"]["content"])
    assert content["session_start_info"]["hparams"] == {
        "lr": {"number_value": 0.1},
        "flag": {"bool_value": True},
    }
