"""One run's values by kind: scalars (both styles), histograms, text and hparams, as written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tb_events import write_calls
from tb_loaders import accumulate

from stoker.tensorboard import Reader, SummaryWriter
from stoker.tensorboard._proto import RecordBlock
from stoker.tensorboard._read.decode import ScalarFastPath, ScalarHits

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def test_scalars_equal_event_accumulator_and_nothing_is_sampled(tmp_path: Path) -> None:
    """12,000 points of two tags come back whole, equal to EventAccumulator's with no limit."""
    rng = np.random.default_rng(0)
    values = rng.normal(size=12_000)
    with SummaryWriter(str(tmp_path)) as writer:
        for step, value in enumerate(values):
            writer.add_scalar("loss", value, step * 3)
            if step % 7 == 0:
                writer.add_scalar("lr/group 0", -value, step, walltime=1000.0 + step)
    reader = Reader(tmp_path)
    accumulator = accumulate(tmp_path)
    for tag in ("loss", "lr/group 0"):
        series = reader.scalars(tag)
        expected = accumulator.Scalars(tag)
        assert series.step.dtype == np.int64
        assert series.value.dtype == np.float64
        assert series.step.tolist() == [e.step for e in expected]
        assert series.wall_time.tolist() == [e.wall_time for e in expected]
        assert series.value.tolist() == [e.value for e in expected]
    assert len(reader.scalars("loss").step) == 12_000
    assert np.array_equal(reader.scalars("loss").value, values.astype(np.float32))


@pytest.mark.parametrize("precise", [False, True])
def test_tensor_style_scalars_are_unified_with_simple_values(tmp_path: Path, precise: bool) -> None:
    """new_style scalars read as scalars, with float64 kept exact when written as double."""
    value = 1.0 / 3.0
    calls = [
        ("add_scalar", ("acc", 0.25, 1), {}),
        (
            "add_scalar",
            ("acc", value, 2),
            {"new_style": True, "double_precision": precise},
        ),
    ]
    reader = Reader(write_calls(tmp_path, calls))
    series = reader.scalars("acc")
    expected = value if precise else float(np.float32(value))
    assert series.step.tolist() == [1, 2]
    assert series.value.tolist() == [0.25, expected]
    assert reader.tags()["tensors"] == []


def test_histograms_equal_eventaccumulate(tmp_path: Path) -> None:
    """Histogram statistics and buckets equal EventAccumulator's for computed and raw ones."""
    rng = np.random.default_rng(1)
    calls = [("add_histogram", ("w", rng.normal(size=500), step), {}) for step in range(3)]
    calls.append(("add_histogram_raw", ("r", 0, 3, 6, 9, 17, [1, 2, 3], [1, 2, 3], 4), {}))
    reader = Reader(write_calls(tmp_path, calls))
    accumulator = accumulate(tmp_path)
    for tag in ("w", "r"):
        got = reader.histograms(tag)
        expected = accumulator.Histograms(tag)
        assert [h.step for h in got] == [e.step for e in expected]
        for mine, theirs in zip(got, expected, strict=True):
            value = theirs.histogram_value
            assert (mine.min, mine.max, mine.num, mine.sum, mine.sum_squares) == (
                value.min, value.max, value.num, value.sum, value.sum_squares,
            )  # fmt: skip
            assert mine.bucket_limit.tolist() == list(value.bucket_limit)
            assert mine.bucket.tolist() == list(value.bucket)


def test_text_and_hparams(tmp_path: Path) -> None:
    """Text reads by its tag with or without /text_summary; hparams read back typed."""
    calls = [
        ("add_text", ("notes", "héllo **world**", 1), {}),
        ("add_text", ("notes", "second", 2), {}),
        (
            "add_hparams",
            ({"lr": 0.01, "opt": "adam", "bn": True}, {"metric/acc": 0.75}),
            {"hparam_domain_discrete": {"opt": ["adam", "sgd"]}, "same_run": True},
        ),
    ]
    reader = Reader(write_calls(tmp_path, calls))
    assert [t.text for t in reader.text("notes")] == ["héllo **world**", "second"]
    assert reader.text("notes/text_summary")[1].step == 2
    (params,) = reader.hparams().values()
    assert params.hparams == {"lr": 0.01, "opt": "adam", "bn": True}
    assert params.metrics == ["metric/acc"]
    assert params.domains == {"opt": ["adam", "sgd"]}
    assert reader.scalars("metric/acc").value.tolist() == [0.75]


def test_scalars_read_in_blocks_equal_scalars_read_event_by_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scalars decoded as columns, among other events, give what an event-by-event read gives.

    Thousands of plain scalars (decoded as columns), with tensor-style scalars of the same
    tag, histograms and a restart purge between them, give exactly what reading every event
    one by one gives: same points, same order, same purge.
    """
    rng = np.random.default_rng(1)
    with SummaryWriter(str(tmp_path), max_queue=10_000) as writer:
        for step in range(3000):
            writer.add_scalar("loss", rng.normal(), step)
            writer.add_scalar("accuracy", rng.random(), step)
            if step % 97 == 0:
                writer.add_scalar("loss", rng.normal(), step, new_style=True)
            if step % 250 == 0:
                writer.add_histogram("weights", rng.normal(size=100), step)
    with SummaryWriter(str(tmp_path), purge_step=2000, max_queue=10_000) as writer:
        for step in range(2000, 2600):
            writer.add_scalar("loss", rng.normal(), step)
            writer.add_scalar("lr", 0.1 / (1 + step), step)

    def read() -> dict[str, list[tuple[int, float, float]]]:
        reader = Reader(tmp_path)
        return {
            tag: list(zip(*(column.tolist() for column in reader.scalars(tag)), strict=True))
            for tag in reader.tags()["scalars"]
        }

    in_blocks = read()
    blocks_hit = []
    original = ScalarFastPath.match_block

    def no_columns(self: ScalarFastPath, block: RecordBlock) -> ScalarHits:
        hits = original(self, block)
        blocks_hit.append(int(hits.hit.sum()))
        hits.hit[:] = False
        return hits

    monkeypatch.setattr(ScalarFastPath, "match_block", no_columns)
    assert read() == in_blocks
    assert max(blocks_hit) > 5000  # the first read did take columns
    assert sorted(in_blocks) == ["accuracy", "loss", "lr"]
    loss_steps = [point[0] for point in in_blocks["loss"]]
    assert len(loss_steps) == 2000 + 2000 // 97 + 1 + 600


def test_scalars_among_mostly_other_events_keep_their_order(tmp_path: Path) -> None:
    """Scalars among histograms in a block are taken in file order, equal to EventAccumulator's.

    In a block that is mostly histograms, each scalar the block decoder found is taken in
    file order between them, equal to EventAccumulator's points.
    """
    rng = np.random.default_rng(3)
    with SummaryWriter(str(tmp_path), max_queue=10_000) as writer:
        for step in range(300):
            writer.add_histogram("w", rng.normal(size=20), step)
            writer.add_histogram("b", rng.normal(size=20), step)
            writer.add_scalar("loss", rng.normal(), step)
    reader = Reader(tmp_path)
    expected = accumulate(tmp_path).Scalars("loss")
    series = reader.scalars("loss")
    assert series.step.tolist() == [e.step for e in expected] == list(range(300))
    assert series.value.tolist() == [e.value for e in expected]
    assert [h.step for h in reader.histograms("w")] == list(range(300))
