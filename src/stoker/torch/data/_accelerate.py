"""accelerate on stoker's engine: an opt-in patch that makes accelerate build stoker's loaders.

accelerate never iterates the loader it is given. ``prepare_data_loader`` (which
``Accelerator.prepare`` and Hugging Face's ``Trainer`` call) and ``skip_first_batches`` build a
new one from its attributes: a ``DataLoaderShard`` (``DataLoaderDispatcher`` with
``dispatch_batches``, ``SkipDataLoader``) around a *base* loader that accelerate constructs as
torch's ``DataLoader`` (torchdata's ``StatefulDataLoader`` with ``use_stateful_dataloader``),
whatever the original's class was. A stoker loader would come back on torch's engine, its
batches right and its workers, slabs and resume gone, and nothing would say so.

:func:`patch_accelerate` changes what accelerate builds the base from, in
``accelerate.data_loader`` only, until its ``with`` block ends (or for the rest of the program
when called as a statement):

* the module's ``DataLoader`` is this door's :class:`~stoker.torch.data.DataLoader`, so every
  base loader accelerate builds runs stoker's engine, with accelerate's own samplers and
  datasets inside it (``BatchSamplerShard``, ``SkipBatchSampler``, ``SeedableRandomSampler``,
  ``IterableDatasetShard``) and its wrappers around it, unchanged;
* the arguments accelerate copies from a loader gain ``worker_type`` and ``split_first_batch``,
  so a stoker loader's own options carry over (a torch loader gets their defaults);
* ``DataLoaderAdapter`` (the base class of the three wrappers) builds stoker's loader for
  ``use_stateful_dataloader=True`` as well (it is stateful itself; torchdata is not needed);
  its ``load_state_dict`` also sets the epoch accelerate passes to ``set_epoch`` at the next
  ``iter()`` to the state's epoch (accelerate would start again at 0 and drop a loaded later
  epoch) and makes ``state_dict()`` give the loaded state until the next batch (accelerate
  would give the one taken when the wrapper was built); its ``state_dict`` refuses the state
  of a ``DataLoaderDispatcher`` over several processes, which would not resume.

accelerate takes the state as it takes torchdata's: before each look-ahead fetch, so it counts
the batches the user has had. A stoker state is a small dict, taken in microseconds, and
taking one draws nothing from torch's global generator.

The adapter methods fall back to accelerate's own for a wrapper whose base is not stoker's.
accelerate's Megatron-LM preparation builds torch's loader itself from the copied arguments, so
``worker_type`` reaches torch's class there: a ``TypeError`` while patched.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Callable
from types import TracebackType
from typing import Any

from stoker.torch.data._loader import DataLoader

__all__ = ["patch_accelerate"]

# DataLoader arguments stoker adds to torch's, with their defaults, for accelerate to copy
_STOKER_ARGUMENTS = {"worker_type": "process", "split_first_batch": False}
# the DataLoaderAdapter methods the patch replaces
_ADAPTER_METHODS = ("__init__", "state_dict", "load_state_dict")
# the tag accelerate adds to a base loader's state; not part of stoker's state
_FINISHED = "_iterator_finished"


def _on_stoker(adapter: Any) -> bool:
    """Tell whether an accelerate wrapper's base loader is stoker's (without its __getattr__)."""
    return isinstance(vars(adapter).get("base_dataloader"), DataLoader)


def _check_one_reader(adapter: Any, dispatcher: type[Any]) -> None:
    """Refuse the state of a loader dispatched over several processes: it would not resume."""
    processes = adapter.state.num_processes if isinstance(adapter, dispatcher) else 1
    if processes > 1:
        raise RuntimeError(
            "state_dict() of a DataLoaderDispatcher needs one process, got num_processes="
            f"{processes}: only process 0 reads the base loader, accelerate takes its state "
            f"before the last of the {processes} batches it fetches at a time, and every "
            "process writes its own state to the same file, so a resume would repeat or skip "
            "batches; pass dispatch_batches=False (each process reads its own shard) or resume "
            "with skip_first_batches"
        )


def _adapter_methods(
    original: dict[str, Callable[..., Any]], dispatcher: type[Any]
) -> dict[str, Callable[..., Any]]:
    """The replacement DataLoaderAdapter methods, each falling back to ``original``'s.

    ``dispatcher`` is accelerate's ``DataLoaderDispatcher``, whose state over several
    processes is refused.
    """

    def __init__(
        self: Any,
        dataset: Any,
        use_stateful_dataloader: bool = False,
        batch_sampler: Any = None,
        **kwargs: Any,
    ) -> None:
        # the base is the module's DataLoader, stoker's; it is stateful itself, so accelerate's
        # torchdata branch (StatefulDataLoader, an ImportError without torchdata) is skipped
        original["__init__"](self, dataset, batch_sampler=batch_sampler, **kwargs)
        self.use_stateful_dataloader = use_stateful_dataloader

    def state_dict(self: Any) -> Any:
        if _on_stoker(self):
            _check_one_reader(self, dispatcher)
        return original["state_dict"](self)

    def load_state_dict(self: Any, state_dict: Any) -> None:
        if not _on_stoker(self) or not isinstance(state_dict, dict):
            original["load_state_dict"](self, state_dict)
            return
        state = {key: value for key, value in state_dict.items() if key != _FINISHED}
        base = self.base_dataloader
        base.load_state_dict(state)
        # what state_dict() gives until the next batch: the loaded state, not the one taken
        # when the wrapper was built
        self.dl_state_dict = {**base.state_dict(), _FINISHED: False}
        if hasattr(self, "iteration"):  # the epoch DataLoaderShard/Dispatcher pass to set_epoch
            self.iteration = state["epoch"]

    replacements: dict[str, Callable[..., Any]] = {
        "__init__": __init__,
        "state_dict": state_dict,
        "load_state_dict": load_state_dict,
    }
    for name, function in replacements.items():
        functools.update_wrapper(function, original[name])
    return replacements


def _accelerate_data_loader() -> Any:
    """``accelerate.data_loader``, checked for the parts the patch replaces."""
    try:
        module = importlib.import_module("accelerate.data_loader")
    except ModuleNotFoundError as err:
        raise ImportError(
            "patch_accelerate needs accelerate: install it with `pip install accelerate`"
        ) from err
    adapter = getattr(module, "DataLoaderAdapter", None)
    arguments = getattr(module, "_PYTORCH_DATALOADER_KWARGS", None)
    if (
        adapter is None
        or not all(name in vars(adapter) for name in _ADAPTER_METHODS)
        or not isinstance(arguments, dict)
        or not hasattr(module, "DataLoader")
        or not hasattr(module, "DataLoaderDispatcher")
    ):
        version = getattr(importlib.import_module("accelerate"), "__version__", "unknown")
        raise RuntimeError(
            "accelerate.data_loader must define DataLoaderAdapter (with __init__, state_dict "
            "and load_state_dict), DataLoaderDispatcher, _PYTORCH_DATALOADER_KWARGS and "
            f"DataLoader, got accelerate {version} without them; patch_accelerate supports "
            "accelerate 1.x (checked with 1.15): upgrade accelerate"
        )
    return module


class _Patch(contextlib.AbstractContextManager[None]):
    """The installed patch: what it replaced, put back when its ``with`` block ends."""

    def __init__(self) -> None:
        module = _accelerate_data_loader()
        self._module: Any = None
        if module.DataLoader is DataLoader:  # already patched: the installer puts it back
            return
        adapter = module.DataLoaderAdapter
        self._loader = module.DataLoader
        self._methods = {name: vars(adapter)[name] for name in _ADAPTER_METHODS}
        arguments = module._PYTORCH_DATALOADER_KWARGS
        self._added = [name for name in _STOKER_ARGUMENTS if name not in arguments]
        for name, method in _adapter_methods(self._methods, module.DataLoaderDispatcher).items():
            setattr(adapter, name, method)
        arguments.update({name: _STOKER_ARGUMENTS[name] for name in self._added})
        module.DataLoader = DataLoader
        self._module = module

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        module, self._module = self._module, None
        if module is None:
            return
        module.DataLoader = self._loader
        for name in self._added:
            module._PYTORCH_DATALOADER_KWARGS.pop(name, None)
        for name, method in self._methods.items():
            setattr(module.DataLoaderAdapter, name, method)

    def __repr__(self) -> str:
        state = "installed" if self._module is not None else "not installed by this call"
        return f"<stoker.torch.data.patch_accelerate(): {state}>"


def patch_accelerate() -> contextlib.AbstractContextManager[None]:
    """Make accelerate build its loaders on stoker's engine (an explicit, reversible patch).

    accelerate (``Accelerator.prepare``, ``prepare_data_loader``, ``skip_first_batches``, and so
    Hugging Face's ``Trainer``) rebuilds every loader it is given on torch's ``DataLoader``.
    While patched, the loader it rebuilds is this door's :class:`DataLoader`: a stoker loader
    keeps its workers, slabs and options (``worker_type`` too), and a torch loader (Trainer's)
    gets stoker's engine with the same arguments. accelerate's sharding
    (``BatchSamplerShard``, ``IterableDatasetShard``, ``dispatch_batches``),
    ``skip_first_batches`` and state handling work as over torch's loader, with the same batches
    for the same seed; ``use_stateful_dataloader=True`` needs no torchdata (stoker's loader
    saves and loads the state) and ``load_state`` resumes the saved epoch where it stopped.

    Only ``accelerate.data_loader`` is changed (its ``DataLoader`` name, the arguments it
    copies from a loader, and ``DataLoaderAdapter``'s construction and state methods); loaders
    accelerate built before keep their base. Nothing is patched at import.

    Returns:
        A context manager: ``with patch_accelerate(): ...`` puts accelerate back at the end of
        the block; called as a statement the patch stays for the rest of the program. Called
        while already patched it changes nothing, and its block's end leaves the patch to the
        call that installed it.

    Raises:
        ImportError: when accelerate is not installed.
        RuntimeError: when the installed accelerate lacks the parts the patch replaces.
    """
    return _Patch()
