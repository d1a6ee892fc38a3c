"""FileWriter: torch's low-level writer takes events and summaries as protobufs, dicts or bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from tb_events import file_events, scalar_steps

import stoker.tensorboard as stb
from stoker.tensorboard._proto import messages as pb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


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
    events = file_events(files[0])[1:]
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
