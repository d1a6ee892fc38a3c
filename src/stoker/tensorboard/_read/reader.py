"""Read event files back: runs of a log directory, typed values, NumPy columns, DataFrames.

:class:`Reader` takes an event file or a log directory. Every directory below the root that
holds event files (names containing ``tfevents``) is a *run*, named by its path relative to the
root (``"."`` for the root itself). Values come back typed (see ``values``) and complete:
nothing is sampled away. :meth:`Reader.reload` reads what writers appended since the last read,
and :meth:`Reader.positions` saves where each file was left so that a later reader can resume.
:func:`read_events` walks the raw events instead.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from stoker.tensorboard._proto import EVENT, HPARAMS_PLUGIN_DATA, TEXT_TAG_SUFFIX, WireError
from stoker.tensorboard._read.decode import decode_tensor
from stoker.tensorboard._read.errors import CorruptRecordWarning, EventFileError
from stoker.tensorboard._read.files import (
    EventFileReader,
    FilePosition,
    FileRemovedError,
    Progress,
    check_progress,
    check_root,
    find_event_files,
    pieces,
)
from stoker.tensorboard._read.parallel import load_runs, worker_count
from stoker.tensorboard._read.run import KINDS, RunData
from stoker.tensorboard._read.values import (
    AudioEvent,
    Event,
    HistogramEvent,
    HParams,
    ImageEvent,
    ScalarSeries,
    TensorEvent,
    TextEvent,
)

__all__ = ["Reader", "read_events"]


def _check_root(path: str | os.PathLike[str]) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {path!r}")
    root = os.fspath(path)
    check_root(root)
    return root


def read_events(path: str | os.PathLike[str]) -> Iterator[Event]:
    """Iterate over every event of an event file, or of every run of a log directory.

    Events come in file order, runs and files in name order. Corrupt records and malformed
    events are skipped with a ``CorruptRecordWarning``.

    Args:
        path: An event file or a log directory.

    Returns:
        An iterator of :class:`Event` tuples with the whole message decoded to a dict.

    Raises:
        TypeError: If ``path`` is not a path.
        EventFileError: If the path does not exist (at once) or a file cannot be read (while
            iterating).
    """
    return _iter_events(_check_root(path))


def _iter_events(root: str) -> Iterator[Event]:
    for run, files in find_event_files(root).items():
        for file in files:
            try:
                yield from _file_events(run, file)
            except FileRemovedError as gone:
                gone.warn()


def _file_events(run: str, file: str) -> Iterator[Event]:
    for piece in pieces(EventFileReader(file)):
        for offset, data in (record for block in piece for record in block.records()):
            try:
                message = EVENT.decode(data)
            except WireError as err:
                warnings.warn(
                    f"{file!r}: malformed event at offset {offset} ({err}); skipping it",
                    CorruptRecordWarning,
                    stacklevel=3,
                )
                continue
            wall_time = float(message.get("wall_time", 0.0))
            step = int(message.get("step", 0))
            yield Event(run, file, offset, wall_time, step, message)


class Reader:
    """Typed, complete access to the values of an event file or a log directory.

    Args:
        path: An event file, or a log directory whose runs are found recursively.
        purge: Drop points orphaned by a restart, as TensorBoard does: a ``SessionLog`` START
            event at step ``S`` drops the points of its run read before it with ``step >= S``.
        positions: Saved :meth:`positions` (file path to ``FilePosition`` or byte offset) to
            resume from; paths may be relative or absolute; files not listed are read from
            their start.
        progress: stoker extension. Called as ``progress(path, bytes read, file size)`` while
            files are read, after every window of at most 16 MiB, here and in :meth:`reload`:
            a hook for a progress bar on huge or badly damaged files. Any callable: it is
            always called in this process (runs read by worker processes report their calls
            back), and an error it raises ends the read.
        workers: stoker extension. Processes that read runs at once: ``None`` (the default)
            uses every core (at most 8) when there are 32 MiB or more to read over two or
            more runs, else reads in this process; ``1`` always reads in this process.
            Workers are forked, so a process with other threads running reads by itself. A
            worker that dies (killed by the OOM killer) raises ``EventFileError``.

    Raises:
        TypeError: If ``path`` is not a path, or ``progress`` not a callable or None.
        ValueError: If a saved position's offset is not an int >= 0, or ``workers`` is not an
            int >= 1 or None.
        EventFileError: If the path does not exist, a file cannot be read, or a worker
            process dies while it holds runs (the error names it, its signal and those runs).

    Warns:
        CorruptRecordWarning: For each corrupt stretch and malformed event skipped, and each
            file removed after the log dir was listed (here and in :meth:`reload`). A run
            whose files were all removed before they were read is not one of :attr:`runs`.

    Example:
        >>> reader = Reader("runs")  # doctest: +SKIP
        >>> loss = reader.scalars("loss")
        >>> loss.step, loss.value  # NumPy columns
    """

    # Whether a run whose files are all gone stays with what was read of it (the Reader's
    # promise) or goes (a subclass that follows a log dir for a page).
    _keep_unlisted = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        purge: bool = True,
        positions: Mapping[str, FilePosition | int] | None = None,
        progress: Progress | None = None,
        workers: int | None = None,
    ) -> None:
        """Read everything written so far."""
        if workers is not None and (
            isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
        ):
            raise ValueError(
                f"workers must be an int >= 1 or None (one per core for large log dirs), "
                f"got {workers!r}"
            )
        self._progress = check_progress(progress)
        self.path = _check_root(path)
        self._workers = workers
        self.purge = purge
        self._warned: set[str] = set()
        self._runs: dict[str, RunData] = {}
        self._start = {os.path.abspath(key): value for key, value in (positions or {}).items()}
        self.reload()

    @property
    def runs(self) -> list[str]:
        """Names of the runs found, sorted."""
        return sorted(self._runs)

    def reload(self) -> int:
        """Read what was appended since the last read, including new files and runs.

        Returns:
            How many records were read.

        Raises:
            EventFileError: If a file cannot be read or is shorter than where it was left, or
                a worker process dies while it holds runs.
        """
        known = set(self._runs)
        listed = find_event_files(self.path, self._warned)
        if not self._keep_unlisted:
            for run in known - set(listed):
                del self._runs[run]
        for run, files in listed.items():
            data = self._runs.get(run)
            if data is None:
                data = self._runs[run] = self._new_run(run)
            for file in files:
                if file not in data.files:
                    start = self._start.get(os.path.abspath(file), 0)
                    offset, skipping = (
                        (start.offset, start.skipping)
                        if isinstance(start, FilePosition)
                        else (start, False)
                    )
                    data.add_file(EventFileReader(file, offset, skipping, progress=self._progress))
        runs = list(self._runs.values())
        workers = worker_count(self._workers, runs)
        count = 0
        with contextlib.closing(load_runs(runs, workers)) as loaded:  # ends workers at once
            for data, records in loaded:
                count += records
                self._runs[data.name] = data  # a worker's run is a copy
                if data.name not in known and not data.files and not records:
                    del self._runs[data.name]  # removed, every file, before any was read
        return count

    def _new_run(self, name: str) -> RunData:
        """A new run's accumulator (a subclass reads runs into another model)."""
        return RunData(name, self.purge)

    def positions(self) -> dict[str, FilePosition]:
        """Return where every file was left; pass it as ``positions=`` to resume there."""
        return {
            path: reader.position
            for data in self._runs.values()
            for path, reader in data.files.items()
        }

    def tags(self, run: str | None = None) -> dict[str, list[str]]:
        """Return kind (``"scalars"``, ``"tensors"``, ...) to the sorted tags of that kind.

        The kinds are those of :meth:`scalars`, :meth:`tensors`, :meth:`histograms`,
        :meth:`images`, :meth:`audio`, :meth:`text`, and ``"hparams"``, which lists the
        pseudo-tag ``"_hparams_"`` when a run has hyperparameters (see :meth:`hparams`).

        Args:
            run: One run, or ``None`` for the union over all runs.

        Raises:
            EventFileError: If ``run`` is not one of :attr:`runs`.
        """
        selected = [self._run(run)] if run is not None else list(self._runs.values())
        out: dict[str, set[str]] = {kind: set() for kind in KINDS}
        for data in selected:
            for kind, tags in data.tags().items():
                out[kind].update(tags)
        return {kind: sorted(tags) for kind, tags in out.items()}

    def _run(self, run: str) -> RunData:
        data = self._runs.get(run)
        if data is None:
            raise EventFileError(
                f"run must be one of {self.runs}, got {run!r}; list them with Reader.runs"
            )
        return data

    def _locate(self, kind: str, tag: str, run: str | None) -> tuple[RunData, str]:
        """Find the run holding ``tag`` of ``kind`` (text tags may omit ``/text_summary``)."""
        if not isinstance(tag, str):
            raise TypeError(f"tag must be a str, got {tag!r}")
        candidates = [self._run(run)] if run is not None else list(self._runs.values())
        for name in (tag, tag + TEXT_TAG_SUFFIX) if kind == "text" else (tag,):
            found = [data for data in candidates if data.has(kind, name)]
            if len(found) == 1:
                return found[0], name
            if len(found) > 1:
                raise EventFileError(
                    f"tag {tag!r} is in several runs {sorted(d.name for d in found)}; "
                    "pass run= to choose one"
                )
        known = sorted({t for data in candidates for t in data.tags()[kind]})
        where = f"run {run!r}" if run is not None else repr(self.path)
        raise EventFileError(
            f"tag must be a {kind} tag of {where}, got {tag!r}; {kind} tags there: {known}"
        )

    def scalars(self, tag: str, run: str | None = None) -> ScalarSeries:
        """Return every point of a scalar tag as NumPy columns.

        ``simple_value`` scalars and scalar tensors of the scalars plugin (``new_style``) are
        both scalars.

        Args:
            tag: The tag.
            run: The run; may be omitted when only one run has the tag.

        Raises:
            EventFileError: If no run, or more than one, has the tag.
        """
        data, name = self._locate("scalars", tag, run)
        return data.scalars(name)

    def tensors(self, tag: str, run: str | None = None) -> list[TensorEvent]:
        """Return every value of a tensor tag, decoded to NumPy with its stored dtype and shape.

        Raises:
            EventFileError: If the tag is missing or ambiguous, or a tensor is malformed.
        """
        data, name = self._locate("tensors", tag, run)
        out = []
        for raw in data.items["tensors"][name]:
            try:
                dtype, value = decode_tensor(raw.payload)
            except WireError as err:
                raise EventFileError(
                    f"tensor {name!r} at step {raw.step} is malformed: {err}"
                ) from err
            out.append(TensorEvent(raw.step, raw.wall_time, value, dtype, raw.plugin_name))
        return out

    def histograms(self, tag: str, run: str | None = None) -> list[HistogramEvent]:
        """Return every histogram of a tag.

        Classic ``histo`` values and TF2-style ``[k, 3]`` tensors of the histograms plugin both
        come back; the latter carry estimated ``sum`` and ``sum_squares`` (``stats_estimated``).

        Raises:
            EventFileError: If no run, or more than one, has the tag.
        """
        data, name = self._locate("histograms", tag, run)
        return list(data.items["histograms"][name])

    def images(self, tag: str, run: str | None = None) -> list[ImageEvent]:
        """Return every image of a tag, still encoded (see :meth:`ImageEvent.to_numpy`).

        A TF2-style image tensor holding several pictures gives one event per picture.

        Raises:
            EventFileError: If no run, or more than one, has the tag.
        """
        data, name = self._locate("images", tag, run)
        return list(data.items["images"][name])

    def audio(self, tag: str, run: str | None = None) -> list[AudioEvent]:
        """Return every audio clip of a tag, still encoded (see :meth:`AudioEvent.to_numpy`).

        A TF2-style audio tensor holding several clips gives one event per clip.

        Raises:
            EventFileError: If no run, or more than one, has the tag.
        """
        data, name = self._locate("audio", tag, run)
        return list(data.items["audio"][name])

    def text(self, tag: str, run: str | None = None) -> list[TextEvent]:
        """Return every text value of a tag (``add_text``'s ``/text_summary`` suffix optional).

        Raises:
            EventFileError: If no run, or more than one, has the tag.
        """
        data, name = self._locate("text", tag, run)
        return list(data.items["text"][name])

    def hparams(self, run: str | None = None) -> dict[str, HParams]:
        """Return run name to the hyperparameters recorded by ``add_hparams`` in that run.

        Raises:
            EventFileError: If the run is unknown or the hparams plugin data is malformed.
        """
        selected = [self._run(run)] if run is not None else list(self._runs.values())
        out = {}
        for data in selected:
            if data.hparam_contents:
                try:
                    out[data.name] = _parse_hparams(data.hparam_contents)
                except WireError as err:
                    raise EventFileError(f"hparams of run {data.name!r} are malformed") from err
        return out

    def scalar_table(self, run: str | None = None) -> dict[str, np.ndarray[Any, Any]]:
        """Return every scalar point of every tag as columns ``run, tag, step, wall_time, value``.

        Rows are grouped by run, then tag (both sorted), then file order.
        """
        selected = [self._run(run)] if run is not None else [self._runs[r] for r in self.runs]
        runs: list[np.ndarray[Any, Any]] = []
        tags: list[np.ndarray[Any, Any]] = []
        series: list[ScalarSeries] = []
        for data in selected:
            for tag in sorted(data.scalar_columns):
                points = data.scalars(tag)
                series.append(points)
                runs.append(np.full(len(points.step), data.name, dtype=object))
                tags.append(np.full(len(points.step), tag, dtype=object))

        def join(parts: list[np.ndarray[Any, Any]], dtype: Any) -> np.ndarray[Any, Any]:
            return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)

        return {
            "run": join(runs, object),
            "tag": join(tags, object),
            "step": join([s.step for s in series], np.int64),
            "wall_time": join([s.wall_time for s in series], np.float64),
            "value": join([s.value for s in series], np.float64),
        }

    def to_dataframe(self, run: str | None = None) -> Any:
        """Return every scalar point as a pandas DataFrame (long format, see :meth:`scalar_table`).

        Raises:
            ImportError: If pandas is not installed.
        """
        try:
            pandas = importlib.import_module("pandas")
        except ImportError as err:
            raise ImportError(
                "Reader.to_dataframe needs pandas, which is not installed; "
                "run `pip install pandas` (or `pip install stoker[pandas]`), "
                "or use Reader.scalar_table() for NumPy columns"
            ) from err
        return pandas.DataFrame(self.scalar_table(run))


def _hparam_value(value: Mapping[str, Any]) -> Any:
    for key in ("number_value", "string_value", "bool_value"):
        if key in value:
            return value[key]
    return None


def _parse_hparams(contents: list[bytes]) -> HParams:
    hparams: dict[str, Any] = {}
    metrics: list[str] = []
    domains: dict[str, list[Any]] = {}
    for content in contents:
        data = HPARAMS_PLUGIN_DATA.decode(content)
        experiment = data.get("experiment")
        if experiment is not None:
            for info in experiment.get("hparam_infos", []):
                values = info.get("domain_discrete", {}).get("values")
                if values is not None:
                    domains[info.get("name", "")] = [_hparam_value(v) for v in values]
            metrics.extend(
                m.get("name", {}).get("tag", "") for m in experiment.get("metric_infos", [])
            )
        start = data.get("session_start_info")
        if start is not None:
            for name, value in start.get("hparams", {}).items():
                hparams[name] = _hparam_value(value or {})
    return HParams(hparams, metrics, domains)
