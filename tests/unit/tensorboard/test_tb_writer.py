"""SummaryWriter's own behaviour: default log dir, purge_step, reopening, bad input, hparams."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tb_events import file_events, only_file, scalar_steps

import stoker.tensorboard as stb
from stoker.tensorboard._proto import messages as pb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


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
    assert len(file_events(only_file(tmp_path))) == 5


def test_add_hparams_same_run_writes_into_this_run(tmp_path: Path) -> None:
    """same_run=True (a stoker addition) keeps the hparams summaries in the writer's own file."""
    with stb.SummaryWriter(tmp_path) as writer:
        writer.add_hparams({"lr": 0.1, "flag": True}, {"acc": 0.5}, same_run=True)
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == []
    tags = [
        value["tag"]
        for event in file_events(only_file(tmp_path))
        for value in event.get("summary", {}).get("value", [])
    ]
    assert tags == [
        "_hparams_/experiment",
        "_hparams_/session_start_info",
        "_hparams_/session_end_info",
        "acc",
    ]
    start = file_events(only_file(tmp_path))[2]["summary"]["value"][0]["metadata"]
    content = pb.HPARAMS_PLUGIN_DATA.decode(start["plugin_data"]["content"])
    assert content["session_start_info"]["hparams"] == {
        "lr": {"number_value": 0.1},
        "flag": {"bool_value": True},
    }


_STEP_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("add_scalar", ("x", 1.0), {}),
    ("add_scalar", ("x", 1.0), {"new_style": True}),
    ("add_scalars", ("g", {"a": 1.0}), {}),
    ("add_text", ("t", "hi"), {}),
    ("add_histogram", ("h", np.ones(3)), {}),
    ("add_tensor", ("t", np.ones(2)), {}),
]


@pytest.mark.parametrize("step", [2**63, 2**64, -(2**63) - 1, np.uint64(2**63)])
@pytest.mark.parametrize(("method", "args", "kwargs"), _STEP_CALLS, ids=[c[0] for c in _STEP_CALLS])
def test_global_step_outside_int64_raises_instead_of_wrapping(
    tmp_path: Path, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], step: Any
) -> None:
    """A step that int64 cannot hold raises ValueError with torch's text and the valid range."""
    writer = stb.SummaryWriter(tmp_path)
    with pytest.raises(ValueError, match=r"Value out of range: .*global_step must be an int in"):
        getattr(writer, method)(*args, global_step=step, **kwargs)
    writer.add_scalar("x", 1.0, 2**63 - 1)
    writer.add_scalar("x", 1.0, -(2**63))
    writer.close()
    assert scalar_steps(only_file(tmp_path)) == [2**63 - 1, -(2**63)]


@pytest.mark.parametrize("step", [2**63, -(2**63) - 1])
def test_purge_step_and_file_writer_steps_are_range_checked(tmp_path: Path, step: int) -> None:
    """purge_step, FileWriter.add_event and add_summary check the int64 range like add_*."""
    with pytest.raises(ValueError, match="purge_step must be an int in"):
        stb.SummaryWriter(tmp_path / "purge", purge_step=step)
    writer = stb.FileWriter(tmp_path / "raw")
    with pytest.raises(ValueError, match="step must be an int in"):
        writer.add_event({"file_version": "x"}, step=step)
    with pytest.raises(ValueError, match="global_step must be an int in"):
        writer.add_summary({"value": []}, global_step=step)
    writer.close()


def test_close_closes_every_file_when_one_fails(tmp_path: Path) -> None:
    """A sub-run whose write failed does not leave the run's other files open; close() raises."""
    import shutil

    writer = stb.SummaryWriter(tmp_path / "run")
    writer.add_scalars("g", {"a": 1.0, "b": 2.0}, 1)
    writer.add_scalar("x", 1.0, 1)
    writer.flush()
    assert writer.all_writers is not None
    files = list(writer.all_writers.values())
    shutil.rmtree(tmp_path / "run" / "g_a")
    with pytest.raises(FileNotFoundError, match="removed while the writer had it open"):
        writer.close()
    assert all(file.event_writer.closed for file in files)
    assert scalar_steps(only_file(tmp_path / "run")) == [1]
