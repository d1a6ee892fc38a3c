"""The one torch boundary: the only module of stoker's torch-free parts that looks at torch.

stoker never imports torch on its own, with one exception: ``add_graph`` traces a model, which
only torch can do, so :func:`trace_module` imports it when called. Every question about a torch
object (is this a tensor, a generator, a torch ``IterableDataset``; what is its NumPy value; what
is a generator's state) and every call into torch (drawing from a ``torch.Generator``, stacking
tensors, seeding a worker, asking ``torch.distributed`` for the rank) goes through here, and each
answers from ``sys.modules``: if the program has not imported torch, no torch object can exist,
so the answer is "no" without importing anything.

Detection is by ``isinstance`` against the imported torch's classes, never by the object's
module name: ``type(x).__module__.startswith("torch")`` also matches objects of torchvision,
torchmetrics or torchdata that are not tensors.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

__all__ = [
    "accelerator_available",
    "as_tensor",
    "batch_collation",
    "bfloat16_bits",
    "copy_into",
    "default_generator",
    "draw_seed",
    "enter_thread_worker",
    "from_numpy",
    "generator_state",
    "index_tensor",
    "is_batch_sampler",
    "is_generator",
    "is_iterable_dataset",
    "is_strided",
    "is_tensor",
    "is_traced_module",
    "leave_thread_worker",
    "loaded",
    "multinomial",
    "new_generator",
    "pin",
    "process_group",
    "randint",
    "randperm",
    "seed_worker",
    "set_generator_state",
    "set_worker_info",
    "slab_dtype",
    "stack",
    "stack_into",
    "tensor_to_numpy",
    "trace_module",
]

SEED_MASK = (1 << 63) - 1


def loaded() -> ModuleType | None:
    """Return the ``torch`` module if the program has imported it, else None (never imports)."""
    return sys.modules.get("torch")


def _require() -> ModuleType:
    torch = sys.modules.get("torch")
    if torch is None:  # a torch object exists only once torch is imported
        raise RuntimeError("torch is not imported; this call needs a torch object")
    return torch


def is_tensor(value: object) -> bool:
    """Tell whether ``value`` is a ``torch.Tensor`` (False whenever torch is not imported)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def is_generator(value: object) -> bool:
    """Tell whether ``value`` is a ``torch.Generator`` (False whenever torch is not imported)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Generator)


def is_iterable_dataset(value: object) -> bool:
    """Tell whether ``value`` is a ``torch.utils.data.IterableDataset`` (torch's own class)."""
    data = sys.modules.get("torch.utils.data")
    iterable = getattr(data, "IterableDataset", None)
    return iterable is not None and isinstance(value, iterable)


def is_strided(tensor: Any) -> bool:
    """Tell whether a tensor has the ordinary dense (strided) layout."""
    return bool(tensor.layout is _require().strided)


def tensor_to_numpy(tensor: Any, name: str) -> np.ndarray[Any, Any]:
    """Return a tensor's values as a NumPy array: detached, on the CPU, ``bfloat16`` as ``float32``.

    Args:
        tensor: a ``torch.Tensor``.
        name: the argument's name, for the error message.

    Returns:
        A NumPy array sharing memory with a CPU tensor where torch allows it.

    Raises:
        ValueError: if the tensor is on the meta device (it holds no data).
    """
    torch = _require()
    value = tensor.detach()
    if value.device.type == "meta":
        raise ValueError(
            f"{name} must hold data, got a tensor on the meta device; "
            "materialize it (for example with .to('cpu')) before logging"
        )
    value = value.cpu()
    if value.dtype == torch.bfloat16:
        value = value.float()
    return np.asarray(value.numpy())


def bfloat16_bits(value: object) -> np.ndarray[Any, Any] | None:
    """Return the raw bits of a ``bfloat16`` tensor as ``uint16``; None for anything else."""
    if not is_tensor(value):
        return None
    torch = _require()
    tensor: Any = value
    if tensor.dtype != torch.bfloat16:
        return None
    bits = tensor.detach().cpu().contiguous().view(torch.int16).numpy()
    return np.asarray(bits).view(np.uint16)


def trace_module(model: Any, args: Any, *, strict: bool) -> tuple[Any, Any]:
    """Trace ``model`` with ``torch.jit.trace`` and inline its graph, for ``add_graph``.

    This is the one call that imports torch itself: a graph can only be traced with it.

    Args:
        model: A ``torch.nn.Module`` (or a scripted function).
        args: The example input(s), a tuple or list.
        strict: Passed to ``torch.jit.trace``.

    Returns:
        ``(trace, graph)``: the traced module and its graph with every call inlined.

    Raises:
        ImportError: If torch is not installed.
        TypeError: If ``model`` is not callable.
    """
    try:
        import torch  # noqa: PLC0415 - optional dependency, imported only to trace a graph
    except ImportError as err:
        raise ImportError("add_graph needs torch: pip install torch") from err
    if not callable(model):
        raise TypeError(f"model must be a torch.nn.Module, got {model!r}")
    trace = torch.jit.trace(model, args, strict=strict)  # type: ignore[no-untyped-call]
    graph = trace.graph
    torch._C._jit_pass_inline(graph)
    return trace, graph


def is_traced_module(value: object) -> bool:
    """Tell whether ``value`` is a ``torch.jit.TracedModule`` (made by :func:`trace_module`)."""
    jit = sys.modules.get("torch.jit")
    traced = getattr(jit, "TracedModule", None)
    return traced is not None and isinstance(value, traced)


def stack(tensors: Sequence[Any]) -> Any:
    """``torch.stack`` the tensors of a batch along a new first dimension."""
    return _require().stack(list(tensors), 0)


def index_tensor(tensor: Any, indices: Sequence[int]) -> Any:
    """Gather the rows ``indices`` of a tensor in one call."""
    torch = _require()
    return tensor[torch.as_tensor(indices, dtype=torch.int64)]


def draw_seed(generator: Any) -> int:
    """Draw a seed from a ``torch.Generator`` as torch's DataLoader draws its base seed."""
    torch = _require()
    value = torch.empty((), dtype=torch.int64).random_(generator=generator).item()
    return int(value) & SEED_MASK


def randperm(n: int, generator: Any) -> list[int]:
    """``torch.randperm(n, generator=generator)`` as a list."""
    order: list[int] = _require().randperm(n, generator=generator).tolist()
    return order


def randint(high: int, size: int, generator: Any) -> list[int]:
    """``size`` draws of ``torch.randint(high, ..., dtype=int64)`` as a list."""
    torch = _require()
    drawn: list[int] = torch.randint(
        high=high, size=(size,), dtype=torch.int64, generator=generator
    ).tolist()
    return drawn


def multinomial(
    weights: np.ndarray[Any, Any], num_samples: int, replacement: bool, generator: Any
) -> np.ndarray[Any, Any]:
    """``torch.multinomial`` over NumPy weights; the drawn indices as a NumPy array."""
    torch = _require()
    drawn = torch.multinomial(
        torch.from_numpy(weights), num_samples, replacement, generator=generator
    )
    return np.asarray(drawn.numpy())


# -- torch's own batching, recognised so that stoker's engine can stand in for it -----------
_TORCH_COLLATE_MAP_KEYS = 7  # Tensor, ndarray, NumPy scalars, float, int, str, bytes


def batch_collation(collate_fn: object) -> str | None:
    """Tell whether ``collate_fn`` is torch's ``default_collate`` or ``default_convert``.

    Returns ``"collate"`` or ``"convert"`` for those (``"collate"`` only while torch's
    ``default_collate_fn_map`` is as torch made it: a map a user extended must be honoured by
    torch's own function), else None. Never imports torch.
    """
    collate = sys.modules.get("torch.utils.data._utils.collate")
    if collate is None or collate_fn is None:
        return None
    if collate_fn is getattr(collate, "default_convert", None):
        return "convert"
    if collate_fn is not getattr(collate, "default_collate", None):
        return None
    fn_map = getattr(collate, "default_collate_fn_map", {})
    expected = {
        _require().Tensor: collate.collate_tensor_fn,
        np.ndarray: collate.collate_numpy_array_fn,
        (np.bool_, np.number, np.object_): collate.collate_numpy_scalar_fn,
        float: collate.collate_float_fn,
        int: collate.collate_int_fn,
        str: collate.collate_str_fn,
        bytes: collate.collate_str_fn,
    }
    pristine = len(fn_map) == _TORCH_COLLATE_MAP_KEYS and all(
        fn_map.get(key) is value for key, value in expected.items()
    )
    return "collate" if pristine else None


def as_tensor(value: Any) -> Any:
    """``torch.as_tensor`` of a NumPy array or scalar: an array's memory is shared, not copied.

    An array mapped from a shared-memory slab stays there.

    A writable ``ndarray`` goes through ``torch.from_numpy``: the same tensor (dtype, shape,
    strides, memory, errors) for a third of the call's cost (1.6 us against 4.9), which the
    door pays on every leaf of every batch. A read-only one keeps ``as_tensor``, which warns
    that the tensor will be writable, as torch's own conversion does.
    """
    torch = _require()
    if type(value) is np.ndarray and value.flags.writeable:
        return torch.from_numpy(value)
    return torch.as_tensor(value)


def slab_dtype(value: object) -> np.dtype[Any] | None:
    """The NumPy dtype a plain CPU tensor's bytes can live under in shared memory, else None.

    Only an exact ``torch.Tensor`` (subclasses keep their own pickling): on the CPU, strided,
    without autograd history to keep, no lazy conjugate or negative bit, of a dtype NumPy has
    (not ``bfloat16``). Such a tensor is its bytes, so a worker can stack or copy it into a
    slab and the main process rebuild it with ``torch.from_numpy`` on the slab, no copy.
    """
    torch = sys.modules.get("torch")
    if torch is None or type(value) is not getattr(torch, "Tensor", None):
        return None
    tensor: Any = value
    if (
        tensor.device.type != "cpu"
        or tensor.layout is not torch.strided
        or tensor.requires_grad
        or tensor.is_conj()
        or tensor.is_neg()
    ):
        return None
    known = _SLAB_DTYPES.get(tensor.dtype)
    if known is None and tensor.dtype not in _SLAB_DTYPES:
        try:
            known = np.dtype(torch.empty(0, dtype=tensor.dtype).numpy().dtype)
        except TypeError:  # bfloat16 and other dtypes without a NumPy twin
            known = None
        _SLAB_DTYPES[tensor.dtype] = known
    return known


_SLAB_DTYPES: dict[Any, np.dtype[Any] | None] = {}
"""torch dtype to NumPy dtype (None: none), filled as dtypes are met."""


def from_numpy(array: np.ndarray[Any, Any]) -> Any:
    """``torch.from_numpy``: a tensor on the array's memory (no copy)."""
    return _require().from_numpy(array)


def stack_into(tensors: Sequence[Any], out: np.ndarray[Any, Any]) -> Any:
    """``torch.stack`` the tensors into ``out``; return the tensor on ``out``'s memory.

    ``out`` is a NumPy array of the stacked shape and dtype.
    """
    torch = _require()
    result = torch.from_numpy(out)
    torch.stack(list(tensors), 0, out=result)
    return result


def copy_into(tensor: Any, out: np.ndarray[Any, Any]) -> None:
    """Copy a tensor's values into ``out`` (a NumPy array of its shape and dtype)."""
    _require().from_numpy(out).copy_(tensor)


def is_batch_sampler(value: object) -> bool:
    """Tell whether ``value`` is exactly a ``torch.utils.data.BatchSampler`` (not a subclass)."""
    sampler = sys.modules.get("torch.utils.data.sampler")
    return sampler is not None and type(value) is getattr(sampler, "BatchSampler", None)


# -- torch's global generator, and generators standing in for it (generator=None) -----------
def default_generator() -> Any:
    """Torch's global generator (``torch.default_generator``), the one ``manual_seed`` seeds."""
    return _require().default_generator


def new_generator(seed: int | None = None, state: str | None = None) -> Any:
    """A new CPU ``torch.Generator``: seeded with ``seed``, or set to a :func:`generator_state`.

    ``new_generator(seed)`` is what torch's RandomSampler makes from the seed it draws when it
    has no generator; ``new_generator(state=...)`` replays draws a generator made from that
    state, without touching the generator the state was taken from.
    """
    generator = _require().Generator()
    if seed is not None:
        generator.manual_seed(seed)
    if state is not None:
        set_generator_state(generator, state)
    return generator


def generator_state(generator: Any) -> str:
    """A ``torch.Generator``'s state as ASCII text (base64 of its state bytes), for JSON."""
    raw = generator.get_state().numpy().tobytes()
    return base64.b64encode(raw).decode("ascii")


def set_generator_state(generator: Any, text: str) -> None:
    """Restore a state made by :func:`generator_state` into ``generator``.

    Raises:
        ValueError: if ``text`` is not base64, or torch rejects the bytes as a state.
    """
    torch = _require()
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as err:
        raise ValueError(
            f"torch generator state must be base64 text, got {text[:40]!r}; "
            "pass a state saved by state_dict()"
        ) from err
    try:
        generator.set_state(torch.from_numpy(np.frombuffer(raw, dtype=np.uint8).copy()))
    except RuntimeError as err:
        raise ValueError(
            f"torch generator state is not a valid state ({len(raw)} bytes): {err}; "
            "pass a state saved by state_dict() with the same kind of generator"
        ) from err


def process_group() -> tuple[int, int] | None:
    """``(rank, world_size)`` of an initialised ``torch.distributed`` group, else None.

    Only a program that already imported ``torch.distributed`` can have a group, so this never
    imports it.
    """
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return None
    if not getattr(dist, "is_available", lambda: False)() or not dist.is_initialized():
        return None
    return int(dist.get_rank()), int(dist.get_world_size())


def seed_worker(seed: int) -> None:
    """Seed torch in a worker (``manual_seed``) and limit it to one intra-op thread, as torch does.

    Does nothing when torch is not imported in this process.
    """
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "manual_seed"):
        torch.set_num_threads(1)
        torch.manual_seed(seed)


# torch's get_worker_info() in stoker's workers.
#
# torch's ``get_worker_info()`` returns one global of torch's worker module, which torch's worker
# loop sets. A stoker process worker sets that global the same way. Thread workers share one
# process, so while any runs, the global holds a ``WorkerInfo`` whose fields are looked up per
# thread: each worker thread gets its own answer; any other thread the answer that was there
# before, or a clear error when that was None. A worker that starts before torch is imported
# leaves a finder on ``sys.meta_path`` that, the moment ``import torch`` has finished (before any
# code can ask), sets the answer and seeds torch as a process worker's start would have; then
# the finder goes.

_WORKER_MODULE = "torch.utils.data._utils.worker"
_TOP = "torch"
_lock = threading.RLock()
_process_fields: tuple[int, int, int, Any] | None = None  # this process worker's, until set
_thread_fields: dict[int, tuple[Any, ...]] = {}  # thread ident -> its WorkerInfo fields
_thread_answers: dict[int, Any] = {}  # thread ident -> its torch WorkerInfo, once built
_answer_before: Any = None
_per_thread_type: type | None = None


def _worker_module() -> Any:
    """Torch's worker module once it has been executed, else None (never imports)."""
    module = sys.modules.get(_WORKER_MODULE)
    return module if hasattr(module, "WorkerInfo") else None


def set_worker_info(worker_id: int, num_workers: int, seed: int, dataset: Any) -> None:
    """Make torch's ``get_worker_info()`` answer for this process, as torch's worker loop does.

    For a process worker: torch's own ``WorkerInfo`` with the worker's id, number of workers,
    seed and dataset replica becomes the process-wide answer, now if torch is imported, else
    the moment it is (torch is then also seeded as :func:`seed_worker` would have done at the
    worker's start).
    """
    global _process_fields
    with _lock:
        _process_fields = (worker_id, num_workers, seed, dataset)
        module = _worker_module()
        if module is None:
            _watch_import()
        else:
            _answer_now(module)


def enter_thread_worker(
    worker_id: int, num_workers: int, seed: int, dataset: Any, worker_method: str
) -> None:
    """Make torch's ``get_worker_info()`` answer for the calling worker thread.

    Now if torch is imported, else the moment it is. Every thread that enters must
    :func:`leave_thread_worker`; the last to leave puts back the answer that was there.
    """
    fields = (worker_id, num_workers, seed, dataset, None, worker_method)
    with _lock:
        ident = threading.get_ident()
        _thread_fields[ident] = fields
        _thread_answers.pop(ident, None)
        module = _worker_module()
        if module is None:
            _watch_import()
        else:
            _answer_now(module)


def leave_thread_worker() -> None:
    """Undo :func:`enter_thread_worker` for the calling thread (nothing if it did not enter)."""
    global _answer_before
    with _lock:
        ident = threading.get_ident()
        if _thread_fields.pop(ident, None) is None:
            return
        _thread_answers.pop(ident, None)
        if _thread_fields:
            return
        module = _worker_module()
        if module is None:
            if _process_fields is None:
                _unwatch_import()  # no answer is waiting for torch any more
        elif type(module._worker_info) is _per_thread_type:
            module._worker_info = _answer_before
        _answer_before = None


def _answer_now(module: Any) -> None:
    """Install the answers registered so far into torch's (executed) worker module."""
    global _process_fields, _answer_before
    with _lock:
        if _process_fields is not None:
            worker_id, num_workers, seed, dataset = _process_fields
            module._worker_info = module.WorkerInfo(
                id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset
            )
            _process_fields = None
        for ident, fields in _thread_fields.items():
            if ident not in _thread_answers:
                _thread_answers[ident] = module.WorkerInfo(*fields)
        if _thread_fields and type(module._worker_info) is not _per_thread_type:
            _answer_before = module._worker_info
            module._worker_info = _per_thread(module.WorkerInfo)


def _not_a_worker_thread_error() -> RuntimeError:
    """The error torch's answer raises in a thread that is no worker while thread workers run."""
    name = threading.current_thread().name
    return RuntimeError(
        f"torch.utils.data.get_worker_info() was read in thread {name!r}, which is not a "
        "DataLoader worker, while stoker thread workers run in this process: torch keeps one "
        "answer per process, so stoker answers it per worker thread and has no answer (None) "
        'for this thread; use process workers (worker_type="process") for the loader whose '
        "dataset asks torch, or read get_worker_info() only in the dataset's code"
    )


def _current_answer() -> Any:
    answer = _thread_answers.get(threading.get_ident())
    if answer is not None:
        return answer
    if _answer_before is not None:
        return _answer_before
    raise _not_a_worker_thread_error()


def _per_thread(base: type) -> Any:
    """A ``base`` (torch's ``WorkerInfo``) instance whose fields answer for the calling thread."""
    global _per_thread_type
    if _per_thread_type is None or _per_thread_type.__bases__ != (base,):
        fields = tuple(field.name for field in dataclasses.fields(base))
        names = frozenset(fields)

        class PerThreadWorkerInfo(base):  # type: ignore[misc]
            """torch's ``WorkerInfo`` while stoker thread workers run: each thread's own answer.

            False (as None would be) and raising on its fields in a thread that is no worker.
            """

            __slots__ = ()

            def __getattribute__(self, name: str) -> Any:
                if name in names:
                    return getattr(_current_answer(), name)
                return object.__getattribute__(self, name)

            def __bool__(self) -> bool:
                mine = threading.get_ident() in _thread_answers
                return mine or _answer_before is not None

            def __repr__(self) -> str:
                if self:
                    return repr(_current_answer())
                return "WorkerInfo(<none: this thread is not a stoker worker thread>)"

            def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
                answer = _current_answer()
                return base, tuple(getattr(answer, name) for name in fields)

        PerThreadWorkerInfo.__qualname__ = PerThreadWorkerInfo.__name__
        _per_thread_type = PerThreadWorkerInfo
    return object.__new__(_per_thread_type)


class _AnswerOnImport(importlib.abc.MetaPathFinder):
    """Finds torch through the other finders, to answer once ``import torch`` has finished."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TOP:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = None if finder is self or find is None else find(fullname, path, target)
            if isinstance(spec, importlib.machinery.ModuleSpec):
                if isinstance(spec.loader, importlib.abc.Loader):
                    spec.loader = _AnswerAfterExec(spec.loader)
                return spec
        return None


class _AnswerAfterExec(importlib.abc.Loader):
    """Runs torch with its own loader, then seeds it and installs the answers."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        if module.__spec__ is not None:  # leave no trace: the module keeps its own loader
            module.__spec__.loader = self.loader
        module.__loader__ = self.loader
        self.loader.exec_module(module)
        with _lock:
            _unwatch_import()
            worker_module = _worker_module()
            if _process_fields is not None:
                seed_worker(_process_fields[2])
            if worker_module is not None:
                _answer_now(worker_module)


_finder = _AnswerOnImport()


def _watch_import() -> None:
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def _unwatch_import() -> None:
    with contextlib.suppress(ValueError):
        sys.meta_path.remove(_finder)


def accelerator_available() -> bool:
    """Tell whether torch is imported and reports an accelerator that pinned memory can target."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "is_available"):
        return bool(accelerator.is_available())
    cuda = getattr(torch, "cuda", None)
    return bool(cuda is not None and cuda.is_available())


def pin(tensor: Any) -> Any:
    """Return a pinned copy of a tensor (or a NumPy array, turned into a tensor first)."""
    torch = _require()
    if isinstance(tensor, np.ndarray):
        tensor = torch.from_numpy(tensor)
    return tensor.pin_memory()
