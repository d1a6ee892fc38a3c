"""The reader on hostile event files: structured mutations of valid logs, in a capped child.

Valid logs of every kind stoker writes (scalars, tensors of many dtypes, histograms, images,
audio, text, hparams, PR curves, meshes, TF2-style tensors) are mutated the way damage and
attackers do it: inside a record (a varint set to 0, 2**31, 2**63 or any value, so dtypes and
shape dimensions; a length prefix that lies; a field's wire type changed, duplicated hundreds
of times, dropped or nested thousands deep; strings replaced by other plugins' names, invalid
UTF-8 or control characters), then re-framed with valid checksums so the decoder sees them; and
on the framing (a length claiming up to 2**64 with a checksum that holds, flipped bytes, runs
of zeros, garbage, a truncated tail).

Every file is read in a child process whose address space is capped with
``resource.setrlimit(RLIMIT_AS)`` (768 MiB above what it holds at start, for files of at most
a few hundred kilobytes) and that must answer within 10 s: the reader (``Reader`` with every
getter, media decoding, ``reload``, ``read_events``) and ``stoker logs ls`` may raise only
``EventFileError`` and warn only ``CorruptRecordWarning``; a ``MemoryError``, any other
exception or warning, a crash or a hang fails the test with the file kept for replay.
``STOKER_FUZZ_EXAMPLES`` sets how many files are tried (150 by default; thousands for a hunt).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stoker.tensorboard import EventFileReader, SummaryWriter
from stoker.tensorboard._proto import (
    EVENT,
    I32,
    I64,
    LEN,
    VARINT,
    WireError,
    encode_varint,
    frame_many,
    iter_fields,
    masked_crc32c,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

_TIME_CAP = 10.0
_MAX_GROWTH = 64 << 10  # bytes one repeat may add
_MEMORY_HEADROOM = 768 << 20

_WORKER = r"""
import io, json, os, resource, sys, traceback, warnings
from types import SimpleNamespace

from stoker.cli import _logs
from stoker.tensorboard import CorruptRecordWarning, EventFileError, Reader, read_events

def vm_size():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")

cap = vm_size() + int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
KINDS = ("scalars", "tensors", "histograms", "images", "audio", "text")

def documented(call):
    try:
        return call()
    except EventFileError:
        return None

def exercise(path):
    reader = documented(lambda: Reader(path))
    if reader is not None:
        for run in reader.runs:
            tags = reader.tags(run)
            for kind in KINDS:
                for tag in tags[kind]:
                    values = documented(lambda: getattr(reader, kind)(tag, run)) or []
                    if kind in ("images", "audio"):
                        for value in values[:4]:
                            documented(value.to_numpy)
            if tags["hparams"]:
                documented(lambda: reader.hparams(run))
            reader.scalar_table(run)
        documented(reader.reload)
    documented(lambda: sum(1 for _ in read_events(path)))
    out, err = io.StringIO(), io.StringIO()
    real = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        status = _logs.main(SimpleNamespace(logs_command="ls", dir=path, run=None))
    finally:
        sys.stdout, sys.stderr = real
    if status not in (0, 2):
        raise AssertionError(f"stoker logs ls exited {status}: {err.getvalue()}")

PROBES = {  # the harness's own check: each failure kind must be seen
    "!raise": lambda: int("not a number"),
    "!warn": lambda: warnings.warn("probe", RuntimeWarning),
    "!memory": lambda: bytearray(int(sys.argv[1]) * 2),
    "!hang": lambda: __import__("time").sleep(3600),
}

for line in sys.stdin:
    path = line.rstrip("\n")
    result = {"ok": True}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            PROBES.get(path, lambda: exercise(path))()
        others = [
            f"{w.category.__name__}: {w.message}"
            for w in caught
            if not issubclass(w.category, CorruptRecordWarning)
        ]
        if others:
            result = {"ok": False, "error": "undocumented warnings: " + "; ".join(others)}
    except BaseException:
        result = {"ok": False, "error": traceback.format_exc()}
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
"""


class _Worker:
    """The capped child that reads files: one path in on stdin, one JSON answer out."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _WORKER, str(_MEMORY_HEADROOM)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        return self.process

    def read(self, path: Path | str, time_cap: float = _TIME_CAP) -> dict[str, Any]:
        """The child's verdict on ``path``; a hang or a crash is a verdict too."""
        process = self.start()
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(f"{path}\n")
        process.stdin.flush()
        ready, _, _ = select.select([process.stdout], [], [], time_cap)
        if not ready:
            self.stop()
            return {"ok": False, "error": f"no answer within {time_cap} s: a hang"}
        line = process.stdout.readline()
        if not line:
            code = process.wait()
            self.stop()
            return {"ok": False, "error": f"the reader's process died (exit status {code})"}
        result: dict[str, Any] = json.loads(line)
        return result

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.wait()
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()


@pytest.fixture(scope="module")
def worker() -> Iterator[_Worker]:
    """One capped reader process for the whole module (restarted after a hang or a crash)."""
    child = _Worker()
    yield child
    child.stop()


def _tf2_events() -> list[dict[str, Any]]:
    """TF2-layout summaries (tensors naming the histograms, images and audio plugins)."""

    def tensor_value(tag: str, plugin: str, tensor: dict[str, Any]) -> dict[str, Any]:
        metadata = {"plugin_data": {"plugin_name": plugin}}
        return {"tag": tag, "metadata": metadata, "tensor": tensor}

    buckets = np.array([[0.0, 1.0, 3.0], [1.0, 2.0, 5.0]], dtype=np.float64)
    histogram = {
        "dtype": 2,
        "tensor_shape": {"dim": [{"size": 2}, {"size": 3}]},
        "tensor_content": buckets.tobytes(),
    }
    images = {"dtype": 7, "tensor_shape": {"dim": [{"size": 3}]}, "string_val": [b"2", b"2", b"x"]}
    audio = {
        "dtype": 7,
        "tensor_shape": {"dim": [{"size": 1}, {"size": 2}]},
        "string_val": [b"RIFF", b""],
    }
    values = [
        tensor_value("h2", "histograms", histogram),
        tensor_value("i2", "images", images),
        tensor_value("a2", "audio", audio),
        tensor_value("s2", "scalars", {"dtype": 1, "float_val": [0.5]}),
    ]
    return [{"step": 4, "wall_time": 1.0, "summary": {"value": values}}]


def _corpus(directory: Path) -> list[bytes]:
    """The encoded events of a log holding every kind of value, in write order."""
    rng = np.random.default_rng(0)
    with SummaryWriter(str(directory)) as writer:
        for step in range(3):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
        writer.add_scalar("acc", 0.5, 3, new_style=True)
        writer.add_scalar("acc64", 0.5, 3, new_style=True, double_precision=True)
        for dtype in (np.float32, np.float16, np.int64, np.int8, np.bool_, np.complex64):
            writer.add_tensor(
                f"t_{np.dtype(dtype).name}", np.arange(6).astype(dtype).reshape(2, 3), 1
            )
        writer.add_tensor("t_str", np.array([b"a", b"bc"]), 1)
        writer.add_histogram("w", rng.normal(size=50), 1)
        writer.add_image("img", rng.random((3, 4, 5)), 1)
        writer.add_audio("snd", np.sin(np.linspace(0, 6, 200)), 1, sample_rate=8000)
        writer.add_text("note", "hello", 1)
        writer.add_pr_curve("pr", np.array([0, 1, 1, 0]), np.array([0.1, 0.9, 0.6, 0.4]), 1)
        writer.add_mesh("mesh", np.zeros((1, 3, 3)), global_step=1)
        writer.add_custom_scalars({"c": {"m": ["Multiline", ["loss"]]}})
        writer.add_hparams({"lr": 0.1, "opt": "sgd", "on": True}, {"loss": 0.2}, same_run=True)
    payloads = []
    for file in sorted(directory.glob("*tfevents*")):
        payloads += [data for _, data in EventFileReader(file).read_records()]
    return payloads + [EVENT.encode(event) for event in _tf2_events()]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """The base log's events, which every example mutates."""
    return _corpus(tmp_path_factory.mktemp("corpus"))


# --- a protobuf tree: what payload mutations work on -------------------------------------------

Node = list[Any]  # [number, wire_type, value]; value: int, bytes, _Lie or list[Node]


class _Lie:
    """A length-delimited field whose length prefix claims ``claim`` bytes, not its own."""

    def __init__(self, claim: int, payload: bytes) -> None:
        self.claim = claim
        self.payload = payload


def _parse(data: bytes, depth: int = 0) -> list[Node] | None:
    """The fields of ``data`` as a tree, sub-messages parsed where they parse; None if not one."""
    try:
        fields = [(number, wire_type, value) for number, wire_type, value in iter_fields(data)]
    except WireError:
        return None
    tree: list[Node] = []
    for number, wire_type, value in fields:
        if wire_type == LEN:
            raw = bytes(value)
            sub = _parse(raw, depth + 1) if raw and depth < 12 else None
            tree.append([number, wire_type, raw if sub is None else sub])
        else:
            tree.append([number, wire_type, value])
    return tree


def _encode(tree: list[Node]) -> bytes:
    parts = []
    for number, wire_type, value in tree:
        parts.append(encode_varint((number << 3) | wire_type))
        if wire_type == VARINT:
            parts.append(encode_varint(value & ((1 << 64) - 1)))
        elif isinstance(value, _Lie):
            parts.append(encode_varint(value.claim) + value.payload)
        elif wire_type == LEN:
            payload = value if isinstance(value, bytes) else _encode(value)
            parts.append(encode_varint(len(payload)) + payload)
        elif isinstance(value, bytes):
            parts.append(value)
        else:
            parts.append(b"")
    return b"".join(parts)


def _nodes(tree: list[Node]) -> list[tuple[list[Node], int]]:
    """Every node as (its parent list, its index), depth first."""
    out: list[tuple[list[Node], int]] = []
    for index, node in enumerate(tree):
        out.append((tree, index))
        if isinstance(node[2], list):
            out += _nodes(node[2])
    return out


_INTERESTING = [0, 1, 2, 3, 5, 7, 9, 14, 19, 23, 127, 128, 255, 2**16, 2**31 - 1, 2**31, 2**32]
_INTERESTING += [2**32 + 1, 2**62, 2**63 - 1, 2**63, 2**64 - 1]
_PLUGINS = [b"scalars", b"histograms", b"images", b"audio", b"text", b"hparams", b"tensor"]
_PLUGINS += [b"pr_curves", b"mesh", b"custom_scalars", b""]
_STRINGS = [b"", b"\xff\xfe", b"\x1b]0;x\x07\x1b[2J", b"\x00" * 8, b"2", b"-1", b"9" * 5000]

_ints = st.one_of(st.sampled_from(_INTERESTING), st.integers(0, 2**64 - 1))
_strings = st.one_of(st.sampled_from(_PLUGINS + _STRINGS), st.binary(max_size=64))


def _mutate_payload(data: st.DataObject, payload: bytes) -> bytes:
    tree = _parse(payload)
    if not tree:
        return payload
    for _ in range(data.draw(st.integers(1, 3), label="payload mutations")):
        nodes = _nodes(tree)
        if not nodes:
            break
        parent, index = nodes[data.draw(st.integers(0, len(nodes) - 1), label="node")]
        node = parent[index]
        action = data.draw(
            st.sampled_from(["value", "length", "wire", "repeat", "drop", "nest"]), label="action"
        )
        if action == "value" and node[1] == VARINT:
            node[2] = data.draw(_ints, label="int")
        elif action == "value" and node[1] == LEN:
            node[2] = data.draw(_strings, label="bytes")
        elif action == "value":
            node[2] = data.draw(st.binary(min_size=4, max_size=8), label="fixed")
        elif action == "length" and node[1] == LEN and not isinstance(node[2], _Lie):
            inner = node[2] if isinstance(node[2], bytes) else _encode(node[2])
            node[2] = _Lie(data.draw(_ints, label="claimed length"), inner)
        elif action == "wire":
            node[1] = data.draw(
                st.sampled_from([VARINT, I64, LEN, I32, 3, 6, 7]), label="wire type"
            )
            if node[1] in (I32, I64):
                node[2] = bytes(4 if node[1] == I32 else 8)
            elif node[1] == VARINT:
                node[2] = 1
            elif node[1] == LEN:
                node[2] = b"x"
            else:
                node[2] = b""
        elif action == "repeat":
            parent[index + 1 : index + 1] = [
                list(node) for _ in range(data.draw(st.integers(1, 300)))
            ]
        elif action == "drop":
            del parent[index]
        elif action == "nest" and node[1] == LEN and not isinstance(node[2], _Lie):
            depth = data.draw(st.sampled_from([2, 50, 101, 1000, 5000]), label="depth")
            inner = node[2] if isinstance(node[2], bytes) else _encode(node[2])
            for _ in range(depth):
                inner = encode_varint((node[0] << 3) | LEN) + encode_varint(len(inner)) + inner
            node[2] = inner
    return _encode(tree)


def _header(length: int) -> bytes:
    packed = struct.pack("<Q", length)
    return packed + struct.pack("<I", masked_crc32c(packed))


def _mutate_framing(data: st.DataObject, buffer: bytes, starts: list[int]) -> bytes:
    for _ in range(data.draw(st.integers(0, 3), label="framing mutations")):
        action = data.draw(
            st.sampled_from(["claim", "flip", "zeros", "garbage", "header", "truncate"]),
            label="framing",
        )
        if action == "claim" and starts:  # a record's length replaced, its checksum recomputed
            start = data.draw(st.sampled_from(starts), label="record")
            if start + 12 <= len(buffer):
                length = data.draw(
                    st.one_of(st.sampled_from(_INTERESTING), st.integers(0, len(buffer) * 2)),
                    label="length",
                )
                buffer = buffer[:start] + _header(length) + buffer[start + 12 :]
            continue
        where = data.draw(st.integers(0, len(buffer)), label="where")
        if action == "flip" and where < len(buffer):
            mask = data.draw(st.integers(1, 255), label="mask")
            buffer = buffer[:where] + bytes([buffer[where] ^ mask]) + buffer[where + 1 :]
        elif action == "zeros":
            size = data.draw(st.sampled_from([1, 11, 12, 4096, 1 << 16]), label="zeros")
            buffer = buffer[:where] + bytes(size) + buffer[where:]
        elif action == "garbage":
            buffer = buffer[:where] + data.draw(st.binary(max_size=64)) + buffer[where:]
        elif action == "header":
            buffer = buffer[:where] + _header(data.draw(_ints, label="claim")) + buffer[where:]
        elif action == "truncate":
            buffer = buffer[:where]
    return buffer


def _framed(payloads: list[bytes]) -> tuple[bytes, list[int]]:
    starts, offset = [], 0
    for payload in payloads:
        starts.append(offset)
        offset += 16 + len(payload)
    return frame_many(payloads), starts


@settings(
    max_examples=int(os.environ.get("STOKER_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_mutated_logs_raise_and_warn_only_what_the_reader_documents(
    worker: _Worker, corpus: list[bytes], data: st.DataObject
) -> None:
    """Any mutation of a valid log: only documented errors, bounded memory, an answer in time.

    Any mutation of a valid log: only EventFileError and CorruptRecordWarning, bounded
    memory (no MemoryError under the address-space cap), an answer within the time cap.
    """
    payloads = list(corpus)
    for _ in range(data.draw(st.integers(1, 4), label="records mutated")):
        index = data.draw(st.integers(0, len(payloads) - 1), label="record")
        payloads[index] = _mutate_payload(data, payloads[index])
    buffer, starts = _framed(payloads)
    buffer = _mutate_framing(data, buffer, starts)
    directory = Path(tempfile.mkdtemp(prefix="stoker-fuzz-"))
    path = directory / "events.out.tfevents.fuzz"
    path.write_bytes(buffer)
    verdict = worker.read(path)
    if verdict["ok"]:
        shutil.rmtree(directory)
    assert verdict["ok"], f"{path} ({len(buffer)} bytes, kept for replay): {verdict['error']}"


@pytest.mark.parametrize(
    ("probe", "seen"),
    [
        ("!raise", "ValueError"),
        ("!warn", "undocumented warnings: RuntimeWarning"),
        ("!memory", "MemoryError"),
        ("!hang", "a hang"),
    ],
)
def test_the_harness_sees_every_kind_of_failure(worker: _Worker, probe: str, seen: str) -> None:
    """The harness sees an undocumented exception, warning or MemoryError, and a hang.

    The child reports an undocumented exception, warning or MemoryError, and the parent a
    hang: the fuzz test cannot pass by not looking.
    """
    verdict = worker.read(probe, time_cap=2.0)
    assert not verdict["ok"]
    assert seen in verdict["error"]


def test_the_harness_passes_a_valid_log(
    worker: _Worker, corpus: list[bytes], tmp_path: Path
) -> None:
    """The unmutated log reads cleanly in the child: every getter, media decoding, `logs ls`."""
    path = tmp_path / "events.out.tfevents.ok"
    path.write_bytes(_framed(corpus)[0])
    assert worker.read(path) == {"ok": True}
