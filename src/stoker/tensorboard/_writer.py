"""SummaryWriter: the ``torch.utils.tensorboard.SummaryWriter`` API over stoker's event files.

Every ``add_*`` method hands its input to a builder of ``_summary`` (which validates it and
returns the encoded ``Summary``) and queues one ``Event`` on the run's :class:`FileWriter`.
``add_scalar`` takes a shortcut: the event bytes are spliced from a per-tag cached prefix, with
no message objects. The writer also owns the run's other files: the sub-runs of
``add_scalars`` and ``add_hparams``, and the purge events of ``purge_step``.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

import stoker.tensorboard._summary as summaries
from stoker.tensorboard._destination import FileOptions, RemoteDestination
from stoker.tensorboard._file_writer import FileWriter
from stoker.tensorboard._proto import event_bytes
from stoker.tensorboard._summary import STEP_MAX, STEP_MIN, check_step, check_walltime

__all__ = ["SummaryWriter"]


class SummaryWriter:
    """Writes TensorBoard event files; a drop-in for ``torch.utils.tensorboard.SummaryWriter``.

    Args:
        log_dir: Run directory. Default ``runs/<Mon DD_HH-MM-SS>_<hostname><comment>``.
        comment: Suffix of the default ``log_dir``; ignored when ``log_dir`` is given.
        purge_step: When resuming a crashed run at step ``T``, pass ``T``: TensorBoard then hides
            events with step >= ``T`` written before this writer started.
        max_queue: Events batched before the writer thread is woken.
        flush_secs: Seconds between ``fsync`` calls; events reach the file within a second.
        filename_suffix: Appended to every event file name.
        max_file_bytes: stoker extension. Start a new event file once the current one holds
            this many bytes. Default ``None``: no limit for a local log dir, 32 MiB for a URL;
            0 turns the limit off.
        max_file_secs: stoker extension. Start a new event file once the current one, holding
            at least one event, is this many seconds old. Default ``None``: no limit for a
            local log dir, 120 s for a URL; 0 turns the limit off.
        storage_options: stoker extension. fsspec filesystem options for a URL log dir, e.g.
            ``{"endpoint_url": "http://127.0.0.1:9000"}`` for s3fs.
        staging_dir: stoker extension. Parent of the local staging directory of a URL log dir;
            default the system temp directory.

    A ``log_dir`` URL such as ``"s3://bucket/run"`` (any fsspec URL; needs
    ``pip install 'stoker[fsspec]'`` and the protocol's package, e.g. s3fs) writes event files
    in a local staging directory and uploads each one once, when it is closed: by rotation
    (``max_file_bytes``, ``max_file_secs``), by :meth:`close`, or at exit. :meth:`flush` uploads
    nothing, so events appear in the store within ``max_file_secs``. Each new file starts with
    its own version record, and the names of one writer's files sort in the order written, so
    TensorBoard reads the run as one. Projector files (:meth:`add_embedding`) are written to the
    store directly.

    A log dir removed while the writer is open (``rm -rf``) gives no error by itself on POSIX:
    the open event file loses its name and goes on taking writes that nobody can read. The
    writer thread checks that the file still has a name after each write and whenever it wakes,
    at least once a second; from that check on, every ``add_*`` call, :meth:`flush` and
    :meth:`close` raises ``FileNotFoundError`` naming the removed directory and how many events
    were not written. So an ``add_*`` call made more than about a second after the removal
    raises; calls in that second return normally and their events are counted as not written
    (checking at every call would cost a third of ``add_scalar``'s time). :meth:`flush` and
    :meth:`close` check at once: the first of them after the removal raises.

    Example:
        >>> with SummaryWriter(tmp_dir) as writer:  # doctest: +SKIP
        ...     writer.add_scalar("loss", 0.5, global_step=1)
    """

    def __init__(  # noqa: PLR0917 - torch's positional signature
        self,
        log_dir: Any = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: int = 120,
        filename_suffix: str = "",
        *,
        max_file_bytes: int | None = None,
        max_file_secs: float | None = None,
        storage_options: Mapping[str, Any] | None = None,
        staging_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """Create the run directory and its first event file."""
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = os.fspath(log_dir)
        self.purge_step = check_step(purge_step, "purge_step")
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self._file_options = FileOptions(
            max_file_bytes, max_file_secs, storage_options, staging_dir
        )
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self._closed_main: FileWriter | None = None
        self._closed_writers: dict[str, FileWriter] = {}
        self._scalars = summaries.ScalarEventEncoder()
        self._add_bytes: Any = None
        self._get_file_writer()

    def _get_file_writer(self) -> FileWriter:
        """Return the run's FileWriter, creating a new event file after :meth:`close`."""
        if self.file_writer is None or self.all_writers is None:
            writer = self._new_file_writer(self.log_dir, self._closed_main)
            self._closed_main = None
            self.file_writer = writer
            self.all_writers = {writer.get_logdir(): writer}
            self._add_bytes = writer.add_event_bytes
            if self.purge_step is not None:
                for event in summaries.purge_events(self.purge_step, time.time()):
                    writer.add_event_bytes(event)
                self.purge_step = None
        return self.file_writer

    def _new_file_writer(self, log_dir: str, closed: FileWriter | None = None) -> FileWriter:
        """Reopen ``closed`` (a writer this one closed before) or make a new FileWriter.

        Reopening keeps the names of one directory's files in write order (``_rotate``).
        """
        if closed is not None:
            closed.reopen()
            return closed
        return FileWriter(
            log_dir,
            self.max_queue,
            self.flush_secs,
            self.filename_suffix,
            **self._file_options.keywords(),
        )

    def _add_summary(self, summary: bytes, global_step: Any, walltime: Any) -> None:
        self._get_file_writer()
        self._add_bytes(event_bytes(summary, check_step(global_step), check_walltime(walltime)))

    def get_logdir(self) -> str:
        """Return the run directory."""
        return str(self.log_dir)

    def add_hparams(
        self,
        hparam_dict: dict[str, Any],
        metric_dict: dict[str, Any],
        hparam_domain_discrete: dict[str, list[Any]] | None = None,
        run_name: str | None = None,
        global_step: int | None = None,
        *,
        same_run: bool = False,
    ) -> None:
        """Record hyperparameters and their metrics for TensorBoard's HParams dashboard.

        Args:
            hparam_dict: Name to value (bool, int, float, str or None, which is skipped).
            metric_dict: Metric tag to final value; also written as scalars.
            hparam_domain_discrete: Name to the list of values the hyperparameter may take.
            run_name: Sub-run directory name (default: the current time, with ``-1``,
                ``-2``... appended in a local log dir if another writer took that name); unused
                with same_run.
            global_step: Step recorded with the summaries.
            same_run: stoker extension. Write into this run's own event file instead of a new
                sub-run directory, so the hyperparameters belong to the scalars of this run.
        """
        experiment, start, end = summaries.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        if same_run:
            target: SummaryWriter = self
        else:
            destination = self._get_file_writer().event_writer.destination
            if run_name:
                subrun = destination.subrun(run_name)
            else:
                subrun = destination.new_subrun(str(time.time()))
            target = SummaryWriter(log_dir=subrun, **self._file_options.keywords())
        try:
            for summary in (experiment, start, end):
                target._add_summary(summary, global_step, None)
            for tag, value in metric_dict.items():
                target.add_scalar(tag, value, global_step)
        finally:
            if target is not self:
                target.close()

    def add_scalar(  # noqa: PLR0917 - torch's positional signature
        self,
        tag: str,
        scalar_value: Any,
        global_step: Any = None,
        walltime: Any = None,
        new_style: bool = False,
        double_precision: bool = False,
    ) -> None:
        """Add one scalar value.

        Args:
            tag: Series name.
            scalar_value: A number, or a one-element array or tensor.
            global_step: Step of the value.
            walltime: Seconds since the epoch (default: now).
            new_style: Store as a scalar tensor instead of ``simple_value``.
            double_precision: With ``new_style``, store a float64 tensor.
        """
        value = (
            scalar_value if type(scalar_value) is float else summaries.scalar_to_float(scalar_value)
        )
        step: int | None = global_step
        if type(step) is not int or not STEP_MIN <= step <= STEP_MAX:
            step = check_step(global_step)
        wall = time.time() if walltime is None else check_walltime(walltime)
        if new_style:
            summary = summaries.scalar(tag, value, True, double_precision)
            self._add_summary(summary, step, wall)
            return
        if self._add_bytes is None:
            self._get_file_writer()
        self._add_bytes(self._scalars.encode(tag, value, step, wall))

    def add_scalars(
        self,
        main_tag: str,
        tag_scalar_dict: Mapping[str, Any],
        global_step: Any = None,
        walltime: Any = None,
    ) -> None:
        """Add several scalars under one chart; each key goes to the sub-run ``main_tag_key``."""
        summaries.check_tag(main_tag, "main_tag")
        if not isinstance(tag_scalar_dict, Mapping):
            raise TypeError(f"tag_scalar_dict must be a dict, got {tag_scalar_dict!r}")
        wall = check_walltime(walltime)
        step = check_step(global_step)
        values = {
            summaries.check_tag(key, "tag_scalar_dict key"): summaries.scalar_to_float(
                value, repr(key)
            )
            for key, value in tag_scalar_dict.items()
        }
        logdir = self._get_file_writer().get_logdir()
        writers = self.all_writers
        if writers is None:
            raise RuntimeError("SummaryWriter is closed")
        for key, value in values.items():
            path = logdir + "/" + main_tag.replace("/", "_") + "_" + key
            writer = writers.get(path)
            if writer is None:
                writer = self._new_file_writer(path, self._closed_writers.pop(path, None))
                writers[path] = writer
            writer.add_event_bytes(self._scalars.encode(main_tag, value, step, wall))

    def add_tensor(
        self, tag: str, tensor: Any, global_step: Any = None, walltime: Any = None
    ) -> None:
        """Add a whole tensor (any dtype TensorBoard reads, bfloat16 and float16 included)."""
        self._add_summary(summaries.tensor(tag, tensor), global_step, walltime)

    def add_histogram(  # noqa: PLR0917 - torch's positional signature
        self,
        tag: str,
        values: Any,
        global_step: Any = None,
        bins: Any = "tensorflow",
        walltime: Any = None,
        max_bins: int | None = None,
    ) -> None:
        """Add a histogram of ``values``; ``bins``: 'tensorflow', a count, a NumPy rule or edges."""
        self._add_summary(summaries.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_histogram_raw(  # noqa: PLR0917 - torch's positional signature
        self,
        tag: str,
        min: float,
        max: float,
        num: int,
        sum: float,
        sum_squares: float,
        bucket_limits: Any,
        bucket_counts: Any,
        global_step: Any = None,
        walltime: Any = None,
    ) -> None:
        """Add a histogram from precomputed statistics and buckets."""
        summary = summaries.histogram_raw(
            tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts
        )
        self._add_summary(summary, global_step, walltime)

    def add_image(
        self,
        tag: str,
        img_tensor: Any,
        global_step: Any = None,
        walltime: Any = None,
        dataformats: str = "CHW",
    ) -> None:
        """Add an image; floats are taken in [0, 1], uint8 in [0, 255]."""
        self._add_summary(summaries.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(
        self,
        tag: str,
        img_tensor: Any,
        global_step: Any = None,
        walltime: Any = None,
        dataformats: str = "NCHW",
    ) -> None:
        """Add a batch of images, tiled into one grid image."""
        self._add_summary(summaries.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_image_with_boxes(  # noqa: PLR0917 - torch's positional signature
        self,
        tag: str,
        img_tensor: Any,
        box_tensor: Any,
        global_step: Any = None,
        walltime: Any = None,
        rescale: float = 1,
        dataformats: str = "CHW",
        labels: Any = None,
    ) -> None:
        """Add an image with boxes ``[x1, y1, x2, y2]`` drawn on it, optionally labelled.

        ``labels`` must hold one string per box; with another count the boxes are drawn
        without labels and a ``UserWarning`` says so (torch drops them silently).
        """
        summary = summaries.image_with_boxes(
            tag, img_tensor, box_tensor, rescale, dataformats, labels
        )
        self._add_summary(summary, global_step, walltime)

    def add_figure(
        self,
        tag: str,
        figure: Any,
        global_step: Any = None,
        close: bool = True,
        walltime: Any = None,
    ) -> None:
        """Render a matplotlib figure (or a list of figures) and add it as an image."""
        self._add_summary(summaries.figure(tag, figure, close), global_step, walltime)

    def add_video(
        self,
        tag: str,
        vid_tensor: Any,
        global_step: Any = None,
        fps: float = 4,
        walltime: Any = None,
    ) -> None:
        """Add a video ``(N, T, C, H, W)`` as an animated GIF."""
        self._add_summary(summaries.video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(
        self,
        tag: str,
        snd_tensor: Any,
        global_step: Any = None,
        sample_rate: int = 44100,
        walltime: Any = None,
    ) -> None:
        """Add mono audio with samples in [-1, 1]."""
        self._add_summary(summaries.audio(tag, snd_tensor, sample_rate), global_step, walltime)

    def add_text(
        self, tag: str, text_string: str, global_step: Any = None, walltime: Any = None
    ) -> None:
        """Add a text (Markdown) entry."""
        self._add_summary(summaries.text(tag, text_string), global_step, walltime)

    def add_onnx_graph(self, prototxt: str) -> None:
        """Add the graph of an ONNX model file (needs the ``onnx`` package)."""
        self._get_file_writer().add_onnx_graph(summaries.onnx_graph_def(prototxt))

    def add_graph(
        self,
        model: Any,
        input_to_model: Any = None,
        verbose: bool = False,
        use_strict_trace: bool = True,
    ) -> None:
        """Add the graph of a torch module, traced with ``torch.jit.trace`` (needs torch)."""
        self._get_file_writer().add_graph(
            summaries.torch_graph(model, input_to_model, verbose, use_strict_trace)
        )

    def add_embedding(  # noqa: PLR0917 - torch's positional signature
        self,
        mat: Any,
        metadata: Sequence[Any] | None = None,
        label_img: Any = None,
        global_step: int | None = None,
        tag: str = "default",
        metadata_header: Sequence[str] | None = None,
    ) -> None:
        """Add an embedding for the projector: tensors, metadata and a sprite of label images."""
        summaries.check_tag(tag)
        event_writer = self._get_file_writer().event_writer
        destination = event_writer.destination
        summaries.write_embedding(
            event_writer.get_logdir(),
            mat,
            metadata,
            label_img,
            metadata_header,
            tag,
            0 if global_step is None else check_step(global_step),
            store=destination if isinstance(destination, RemoteDestination) else None,
        )

    def add_pr_curve(  # noqa: PLR0917 - torch's positional signature
        self,
        tag: str,
        labels: Any,
        predictions: Any,
        global_step: Any = None,
        num_thresholds: int = 127,
        weights: Any = None,
        walltime: Any = None,
    ) -> None:
        """Add a precision-recall curve computed from binary labels and predictions."""
        summary = summaries.pr_curve(tag, labels, predictions, num_thresholds, weights)
        self._add_summary(summary, global_step, walltime)

    def add_pr_curve_raw(  # noqa: PLR0917 - torch's positional signature
        self,
        tag: str,
        true_positive_counts: Any,
        false_positive_counts: Any,
        true_negative_counts: Any,
        false_negative_counts: Any,
        precision: Any,
        recall: Any,
        global_step: Any = None,
        num_thresholds: int = 127,
        weights: Any = None,
        walltime: Any = None,
    ) -> None:
        """Add a precision-recall curve from precomputed counts; ``weights`` is unused."""
        curves = (true_positive_counts, false_positive_counts, true_negative_counts,
                  false_negative_counts, precision, recall)  # fmt: skip
        summary = summaries.pr_curve_raw(tag, curves, num_thresholds)
        self._add_summary(summary, global_step, walltime)

    def add_custom_scalars_multilinechart(
        self, tags: list[str], category: str = "default", title: str = "untitled"
    ) -> None:
        """Add a custom-scalars chart plotting ``tags`` together."""
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(
        self, tags: list[str], category: str = "default", title: str = "untitled"
    ) -> None:
        """Add a custom-scalars margin chart from three tags: value, lower, upper."""
        if len(tags) != 3:
            raise ValueError(
                f"tags must have exactly 3 entries (value, lower, upper), got {tags!r}"
            )
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    def add_custom_scalars(self, layout: Mapping[str, Mapping[str, Sequence[Any]]]) -> None:
        """Set the custom-scalars layout: ``{category: {chart: ['Multiline'|'Margin', tags]}}``."""
        self._add_summary(summaries.custom_scalars(layout), None, None)

    def add_mesh(  # noqa: PLR0917 - torch's positional signature
        self,
        tag: str,
        vertices: Any,
        colors: Any = None,
        faces: Any = None,
        config_dict: dict[str, Any] | None = None,
        global_step: Any = None,
        walltime: Any = None,
    ) -> None:
        """Add a mesh or point cloud: vertices, optional colors and faces, each ``(B, N, 3)``."""
        summary = summaries.mesh(tag, vertices, colors, faces, config_dict)
        self._add_summary(summary, global_step, walltime)

    def flush(self) -> None:
        """Return once every event added so far is in its file.

        For a URL log dir that file is the staged one: nothing is uploaded until it is closed.
        """
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self) -> None:
        """Flush and close every event file; a later ``add_*`` opens a new file.

        Every file is closed even when one of them fails; the first failure is raised after.

        Raises:
            OSError: If a write failed (a full disk, a removed log dir).
            RuntimeError: If the files of a URL log dir could not be uploaded.
        """
        if self.all_writers is None:
            return
        writers = list(self.all_writers.values())
        self._closed_main = self.file_writer
        self._closed_writers = {
            path: writer
            for path, writer in self.all_writers.items()
            if writer is not self.file_writer
        }
        self.file_writer = self.all_writers = None
        self._add_bytes = None
        failure: OSError | RuntimeError | None = None
        for writer in writers:
            try:
                writer.close()
            except (OSError, RuntimeError) as err:
                failure = failure or err
        if failure is not None:
            raise failure

    def __enter__(self) -> SummaryWriter:
        """Return the writer itself."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        """Close the writer."""
        self.close()
