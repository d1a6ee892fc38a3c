"""The data server over real gRPC: TensorBoard's own client against stoker.board.DataServer.

Answers are compared with TensorBoard's own provider (``MultiplexerDataProvider`` over its
Python loader, keeping every point) through the same Python API the web server uses
(``GrpcDataProvider``); bad requests get the documented statuses; a live log dir is followed
(new points, tags, runs, a deleted run, a corrupt record); blobs are read from their files.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import board_corpus
import grpc
import numpy as np
import pytest
from tensorboard import context, errors
from tensorboard.backend.event_processing import data_provider as tb_provider
from tensorboard.backend.event_processing import plugin_event_multiplexer as tb_multiplexer
from tensorboard.data import grpc_provider, provider
from tensorboard.data.proto import data_provider_pb2 as pb

import stoker.tensorboard as stb
from stoker.board import DataServer
from stoker.tensorboard import CorruptRecordWarning, EventFileError

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

EXPERIMENT = "defaultExperimentId"
DEADLINE = 30.0
# Each plugin with the data class its series have (what the page's plugins ask for).
PLUGINS = {
    "scalars": "scalars",
    "histograms": "tensors",
    "text": "tensors",
    "pr_curves": "tensors",
    "mesh": "tensors",
    "hparams": "tensors",
    "custom_scalars": "tensors",
    "images": "blob_sequences",
    "audio": "blob_sequences",
    "graphs": "blob_sequences",
    "graph_run_metadata": "blob_sequences",
    "graph_tagged_run_metadata": "blob_sequences",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The board corpus (every kind, several runs) written by stoker's writer."""
    return board_corpus.write_stoker_corpus(tmp_path_factory.mktemp("corpus") / "logs")


def _client(address: str) -> Any:
    channel = grpc.insecure_channel(
        address, options=[("grpc.max_receive_message_length", 256 << 20)]
    )
    return grpc_provider.GrpcDataProvider(address, grpc_provider.make_stub(channel))


@contextlib.contextmanager
def served(logdir: Path | str, **options: Any) -> Iterator[tuple[DataServer, Any]]:
    """A started DataServer on ``logdir`` and TensorBoard's gRPC client of it."""
    with DataServer(logdir, **options) as server:
        yield server, _client(server.address)


def _python_provider(logdir: Path) -> Any:
    """TensorBoard's own provider over its Python loader, keeping every point."""
    keep_all = dict.fromkeys(PLUGINS, 0)
    multiplexer = tb_multiplexer.EventMultiplexer(
        size_guidance={"tensors": 0}, tensor_size_guidance=keep_all
    )
    multiplexer.AddRunsFromDirectory(str(logdir))
    multiplexer.Reload()
    return tb_provider.MultiplexerDataProvider(multiplexer, str(logdir))


def _answers(source: Any, ctx: Any, plugin: str, kind: str, num_points: int) -> dict[str, Any]:
    """Every list and read answer for one plugin, blob keys replaced by the blobs' bytes."""
    listed = getattr(source, f"list_{kind}")(ctx, experiment_id=EXPERIMENT, plugin_name=plugin)
    read = getattr(source, f"read_{kind}")(
        ctx, experiment_id=EXPERIMENT, plugin_name=plugin, downsample=num_points
    )
    if kind == "tensors":
        read = {
            run: {tag: [(d.step, d.wall_time, d.numpy.tolist()) for d in data]
                  for tag, data in tags.items()}
            for run, tags in read.items()
        }  # fmt: skip
    if kind == "blob_sequences":
        read = {
            run: {tag: [(d.step, d.wall_time,
                         [bytes(source.read_blob(ctx, blob_key=ref.blob_key)) for ref in d.values])
                        for d in data]
                  for tag, data in tags.items()}
            for run, tags in read.items()
        }  # fmt: skip
    return {"list": listed, "read": read}


@pytest.mark.parametrize("num_points", [1, 3, 1_000_000])
def test_every_answer_equals_tensorboards_own_provider(corpus: Path, num_points: int) -> None:
    """For every plugin, list, read and blob answers equal those of TensorBoard's own provider.

    For every plugin of the corpus, list and read answers (downsampled to 1, 3 and all
    points) and every blob's bytes equal those of TensorBoard's own provider on the files.
    """
    ctx = context.RequestContext()
    expected_source = _python_provider(corpus)
    with served(corpus, reload_interval=0) as (_, client):
        assert sorted(client.list_plugins(ctx, experiment_id=EXPERIMENT)) == sorted(
            expected_source.list_plugins(ctx, experiment_id=EXPERIMENT)
        )
        runs = {run.run_name: run.start_time for run in client.list_runs(ctx, experiment_id="")}
        expected_runs = expected_source.list_runs(ctx, experiment_id="")
        assert runs == {run.run_name: run.start_time for run in expected_runs}
        for plugin, kind in PLUGINS.items():
            found = _answers(client, ctx, plugin, kind, num_points)
            expected = _answers(expected_source, ctx, plugin, kind, num_points)
            if plugin == "scalars":  # the protocol's value is a float32 (ScalarData.value)
                expected = _float32_scalars(expected)
                found = _float32_scalars(found)  # as repr too: NaN then equals NaN
            assert found == expected, plugin
        assert found["read"], "the corpus has no graph run metadata any more"


def _float32_scalars(answers: dict[str, Any]) -> dict[str, Any]:
    """Each scalar as (step, wall time, repr of the value rounded to float32)."""
    read = {
        run: {tag: [(d.step, d.wall_time, repr(float(np.float32(d.value)))) for d in data]
              for tag, data in tags.items()}
        for run, tags in answers["read"].items()
    }  # fmt: skip
    return {"list": answers["list"], "read": read}


def test_a_long_series_is_downsampled_as_tensorboard_downsamples(tmp_path: Path) -> None:
    """5,000 points asked for as 1,000 are the 1,000 points TensorBoard's provider keeps.

    5,000 points asked for as 1,000: the same 1,000 points as TensorBoard's provider keeps
    from the same series, the last one always among them, on every call.
    """
    with stb.SummaryWriter(tmp_path / "run") as writer:
        for step in range(5000):
            writer.add_scalar("loss", 1.0 / (step + 1), step, walltime=1e9 + step)
    ctx = context.RequestContext()
    expected = _python_provider(tmp_path).read_scalars(
        ctx, experiment_id="", plugin_name="scalars", downsample=1000
    )
    with served(tmp_path, reload_interval=0) as (_, client):
        answers = [
            client.read_scalars(ctx, experiment_id="", plugin_name="scalars", downsample=1000)
            for _ in range(2)
        ]
    found = [_float32_scalars({"list": {}, "read": answer})["read"] for answer in answers]
    assert found[0] == found[1] == _float32_scalars({"list": {}, "read": expected})["read"]
    steps = [datum.step for datum in answers[0]["run"]["loss"]]
    assert len(steps) == 1000
    assert steps[-1] == 4999
    assert steps == sorted(set(steps))


def test_run_and_tag_filters_select_as_tensorboard_selects(corpus: Path) -> None:
    """Run and tag filters select what TensorBoard's provider selects.

    Run and tag filters, alone and together, and filters naming nothing, select what
    TensorBoard's provider selects; a run with no matching series is left out.
    """
    ctx = context.RequestContext()
    expected_source = _python_provider(corpus)
    filters = [
        provider.RunTagFilter(runs=["train"]),
        provider.RunTagFilter(tags=["loss"]),
        provider.RunTagFilter(runs=["eval", "a/b"], tags=["loss", "depth/inner"]),
        provider.RunTagFilter(runs=[], tags=None),
        provider.RunTagFilter(runs=["no such run"], tags=["loss"]),
        provider.RunTagFilter(runs=["train"], tags=[]),
    ]
    with served(corpus, reload_interval=0) as (_, client):
        for run_tag_filter in filters:
            options = {"experiment_id": "", "plugin_name": "scalars",
                       "run_tag_filter": run_tag_filter}  # fmt: skip
            found = client.list_scalars(ctx, **options)
            assert found == expected_source.list_scalars(ctx, **options), run_tag_filter
            read = client.read_scalars(ctx, downsample=10, **options)
            assert {run: sorted(tags) for run, tags in read.items()} == {
                run: sorted(tags) for run, tags in found.items()
            }


def _raw_call(address: str, method: str, request: bytes) -> grpc.RpcError:
    """Call ``method`` with raw request bytes; return the error it answers with."""
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(f"/tensorboard.data.TensorBoardDataProvider/{method}")
        with pytest.raises(grpc.RpcError) as caught:
            call(request, timeout=10)
    error: grpc.RpcError = caught.value
    return error


def test_bad_requests_get_statuses_never_tracebacks(corpus: Path) -> None:
    """Bad requests get INVALID_ARGUMENT or NOT_FOUND, and the server goes on serving.

    A missing or negative downsample and malformed request bytes are INVALID_ARGUMENT; a
    malformed blob key INVALID_ARGUMENT; a key naming no blob NOT_FOUND: each a status with a
    message naming the value, the server still serving afterwards.
    """
    ctx = context.RequestContext()
    with served(corpus, reload_interval=0) as (server, client):
        stub = grpc_provider.make_stub(grpc.insecure_channel(server.address))
        no_downsample = pb.ReadScalarsRequest()
        no_downsample.plugin_filter.plugin_name = "scalars"
        with pytest.raises(grpc.RpcError) as caught:
            stub.ReadScalars(no_downsample, timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "downsample" in caught.value.details()
        with pytest.raises(errors.InvalidArgumentError, match="-5"):
            client.read_tensors(ctx, experiment_id="", plugin_name="text", downsample=-5)
        for method in ("ListRuns", "ReadScalars", "ReadBlob"):
            error = _raw_call(server.address, method, b"\xff\xff\xff")
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, method
            assert "malformed" in error.details()
        with pytest.raises(errors.InvalidArgumentError, match="not a blob key"):
            client.read_blob(ctx, blob_key="%%%")
        unknown = [
            ("nope", "picture", 0, 0),
            ("train", "nope", 0, 0),
            ("train", "picture", 99, 0),
            ("train", "picture", 0, 3),
            ("train", "loss", 0, 0),  # a scalar series has no blobs
        ]
        for run, tag, step, index in unknown:
            key = tb_provider._encode_blob_key("", "images", run, tag, step, index)
            with pytest.raises(errors.NotFoundError, match="blob key"):
                client.read_blob(ctx, blob_key=key)
        assert client.list_runs(ctx, experiment_id="")  # still serving


def _poll(read: Callable[[], Any], done: Callable[[Any], bool]) -> Any:
    deadline = time.monotonic() + DEADLINE
    while True:
        result = read()
        if done(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.05)


def test_a_live_log_dir_is_followed(tmp_path: Path) -> None:
    """New points, tags and runs appear at the next reload, and deleted runs disappear.

    While runs are written, new points, new tags and new runs appear at the next reload;
    a run whose files are deleted disappears; the cached answers follow.
    """
    ctx = context.RequestContext()
    writer = stb.SummaryWriter(tmp_path / "a", flush_secs=0.05)
    writer.add_scalar("loss", 1.0, 0)
    writer.flush()

    def scalars() -> dict[str, Any]:
        return client.read_scalars(ctx, experiment_id="", plugin_name="scalars", downsample=100)

    with served(tmp_path, reload_interval=0.1) as (_, client):
        assert [d.step for d in scalars()["a"]["loss"]] == [0]
        for step in range(1, 5):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
        writer.add_scalar("acc", 0.5, 4)
        writer.flush()
        found = _poll(scalars, lambda r: len(r["a"]["loss"]) == 5 and "acc" in r["a"])
        assert [d.step for d in found["a"]["loss"]] == [0, 1, 2, 3, 4]
        assert [d.value for d in found["a"]["acc"]] == [0.5]
        with stb.SummaryWriter(tmp_path / "b") as other:
            other.add_text("note", "hello", 0)
        runs = _poll(lambda: client.list_runs(ctx, experiment_id=""), lambda r: len(r) == 2)
        assert sorted(run.run_name for run in runs) == ["a", "b"]
        texts = client.read_tensors(ctx, experiment_id="", plugin_name="text", downsample=10)
        assert texts["b"]["note/text_summary"][0].numpy.tolist() == [b"hello"]
        writer.close()
        shutil.rmtree(tmp_path / "a")
        runs = _poll(lambda: client.list_runs(ctx, experiment_id=""), lambda r: len(r) == 1)
        assert [run.run_name for run in runs] == ["b"]
        assert scalars() == {}


def test_a_corrupt_record_is_skipped_with_one_warning(tmp_path: Path) -> None:
    """Garbage in a file: the points before and after it are served, with one CorruptRecordWarning.

    Garbage in the middle of a file: the points before and after it are served, and the
    damage is one CorruptRecordWarning when the log dir is read.
    """
    with stb.SummaryWriter(tmp_path / "run") as writer:
        writer.add_scalar("loss", 1.0, 0)
    (path,) = (tmp_path / "run").glob("events.*")
    with stb.SummaryWriter(tmp_path / "run", filename_suffix=".z") as writer:
        writer.add_scalar("loss", 2.0, 1)
    (later,) = (tmp_path / "run").glob("events.*.z")
    with path.open("ab") as out:
        out.write(b"\x00garbage that is no record" * 10)
    ctx = context.RequestContext()
    with pytest.warns(CorruptRecordWarning) as caught:
        server = DataServer(tmp_path, reload_interval=0)
    with server:
        found = _client(server.address).read_scalars(
            ctx, experiment_id="", plugin_name="scalars", downsample=10
        )
    assert [d.value for d in found["run"]["loss"]] == [1.0, 2.0]
    assert len([w for w in caught if issubclass(w.category, CorruptRecordWarning)]) == 1
    assert later.exists()


def test_images_are_read_from_their_files_not_held(tmp_path: Path) -> None:
    """What the server holds of 20 images pickles small; each is served byte for byte from its file.

    A run of 20 incompressible 256x256 images: what the server holds pickles to a small
    fraction of the images' bytes, and every image comes back byte for byte from its file.
    """
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (256, 256, 3), dtype=np.uint8) for _ in range(20)]
    with stb.SummaryWriter(tmp_path / "run") as writer:
        for step, image in enumerate(images):
            writer.add_image("noise", image, step, dataformats="HWC")
    on_disk = sum(path.stat().st_size for path in (tmp_path / "run").glob("events.*"))
    ctx = context.RequestContext()
    with served(tmp_path, reload_interval=0) as (server, client):
        held = len(pickle.dumps(server.provider._runs))
        read = client.read_blob_sequences(
            ctx, experiment_id="", plugin_name="images", downsample=100
        )
        blobs = [
            client.read_blob(ctx, blob_key=datum.values[2].blob_key)
            for datum in read["run"]["noise"]
        ]
    assert on_disk > 20 * 256 * 256 * 3
    assert held < on_disk / 50
    decoded = [stb.ImageEvent(0, 0.0, 256, 256, 3, blob).to_numpy() for blob in blobs]
    assert all(np.array_equal(d, image) for d, image in zip(decoded, images, strict=True))


def test_a_blob_whose_file_was_removed_is_not_found(tmp_path: Path) -> None:
    """An image whose file is removed after listing gives NOT_FOUND naming the file.

    Images listed, then their file removed before the page asks: NOT_FOUND naming the
    file, not a traceback or other bytes.
    """
    with stb.SummaryWriter(tmp_path / "run") as writer:
        writer.add_image("picture", np.zeros((4, 4, 3), dtype=np.uint8), 0, dataformats="HWC")
    ctx = context.RequestContext()
    with served(tmp_path, reload_interval=0) as (_, client):
        read = client.read_blob_sequences(ctx, experiment_id="", plugin_name="images",
                                          downsample=10)  # fmt: skip
        (path,) = (tmp_path / "run").glob("events.*")
        os.remove(path)
        with pytest.raises(errors.NotFoundError, match="events"):
            client.read_blob(ctx, blob_key=read["run"]["picture"][0].values[2].blob_key)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"port": -1}, "port must be"),
        ({"port": 70000}, "port must be"),
        ({"port": True}, "port must be"),
        ({"reload_interval": -1}, "reload_interval must be"),
        ({"reload_interval": float("nan")}, "reload_interval must be"),
        ({"reload_interval": "5"}, "reload_interval must be"),
        ({"host": ""}, "host must be"),
    ],
)
def test_bad_options_are_refused_naming_the_value(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    """Out-of-range ports, reload intervals and hosts are ValueErrors naming the value."""
    with pytest.raises(ValueError, match=message):
        DataServer(tmp_path, **options)


def test_a_missing_log_dir_is_an_event_file_error(tmp_path: Path) -> None:
    """A log dir that does not exist is refused at once, naming it."""
    with pytest.raises(EventFileError, match="nothing"):
        DataServer(tmp_path / "nothing")


def test_requests_in_flight_during_reloads_see_one_state(tmp_path: Path) -> None:
    """Readers racing a writer and 10 ms reloads always get a prefix of what was written.

    Readers asking while a writer appends and the server reloads every 10 ms always get a
    series whose points are a prefix of what was written, in order.
    """
    ctx = context.RequestContext()
    writer = stb.SummaryWriter(tmp_path / "run", flush_secs=0.01)
    writer.add_scalar("x", 0.0, 0)
    writer.flush()
    failures: list[str] = []
    with served(tmp_path, reload_interval=0.01) as (_, client):
        stop = threading.Event()

        def ask() -> None:
            while not stop.is_set():
                read = client.read_scalars(ctx, experiment_id="", plugin_name="scalars",
                                           downsample=100_000)  # fmt: skip
                steps = [d.step for d in read.get("run", {}).get("x", [])]
                if steps != list(range(len(steps))):
                    failures.append(f"steps {steps[:10]}...")

        askers = [threading.Thread(target=ask) for _ in range(3)]
        for thread in askers:
            thread.start()
        for step in range(1, 3000):
            writer.add_scalar("x", float(step), step)
        writer.close()
        final = _poll(
            lambda: client.read_scalars(ctx, experiment_id="", plugin_name="scalars",
                                        downsample=100_000),
            lambda r: len(r["run"]["x"]) == 3000,
        )  # fmt: skip
        stop.set()
        for thread in askers:
            thread.join(30)
    assert failures == []
    assert [d.step for d in final["run"]["x"]] == list(range(3000))
