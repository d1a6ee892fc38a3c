"""Worker troubles through stoker.data and stoker.torch.data: torch's words, stoker's details.

A dataset that raises in a worker, a worker that exits, a batch slower than ``timeout``, a
``worker_init_fn`` that cannot be pickled and a process out of file descriptors each give an
error (or warning) containing what torch's DataLoader says for the same trouble, followed by
stoker's explanation (worker id, pid, indices, how to fix).
"""

from __future__ import annotations

import gc
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch.utils.data as torch_data
from data_workers_helpers import SUPPORT
from torch_door_helpers import Troubled

import stoker.data as stoker_data
import stoker.torch.data as door

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)
MODULES = [pytest.param(stoker_data, id="stoker.data"), pytest.param(door, id="stoker.torch.data")]


def _error(module: Any, trouble: str, **kwargs: Any) -> BaseException:
    """The error iterating a loader over ``Troubled(trouble)`` raises, its loader collected.

    torch's iterator must be gone before stoker's workers run: while it lives, torch's SIGCHLD
    handler (installed process-wide) raises for its dead worker in whatever code runs next.
    """
    loader = module.DataLoader(Troubled(trouble), batch_size=1, num_workers=1, **kwargs)
    with pytest.raises(Exception) as caught:  # noqa: PT011 - compared with torch's below
        list(loader)
    del loader
    error = caught.value.with_traceback(None)
    del caught
    gc.collect()
    return error


@pytest.mark.parametrize("module", MODULES)
def test_an_error_in_a_worker_says_caught_as_torch_does(module: Any) -> None:
    """The re-raised error has the dataset's type, torch's text, the message and the dataset index.

    The re-raised error is of the dataset's type and holds torch's "Caught ValueError in
    DataLoader worker process 0." besides the original message and stoker's dataset index.
    """
    theirs = _error(torch_data, "raise")
    ours = _error(module, "raise")
    assert isinstance(ours, type(theirs))
    first_line = str(theirs).splitlines()[0]
    assert first_line == "Caught ValueError in DataLoader worker process 0."
    assert first_line in str(ours)
    assert str(ours).startswith("index 2 is bad")
    assert "dataset index 2" in str(ours)


_EXITED = (
    r"DataLoader worker \(pid \d+\) exited unexpectedly with exit code 3\. Details are lost "
    r"due to multiprocessing\. Rerunning with num_workers=0 may give better error trace\."
)
_EXITED_ANY = r"DataLoader worker \(pid\(s\) [\d, ]+\) exited unexpectedly"


def test_torchs_dead_worker_sentences_are_still_torchs() -> None:
    """The two sentences stoker quotes are the ones torch 2.13 writes.

    The two sentences stoker quotes are the ones torch 2.13 writes: the SIGCHLD handler's
    (compiled into libtorch_python) and the liveness check's (in dataloader.py). Read from torch's
    files, not from a run of torch's loader, whose pipe may break before either is raised.
    """
    import torch.utils.data.dataloader as torch_dataloader

    library = Path(torch_dataloader.__file__).parents[2] / "lib"
    compiled = b"".join(path.read_bytes() for path in library.glob("libtorch_python*"))
    handler = _EXITED.replace(r"\d+", "{}").replace("exit code 3", "exit code {}")
    assert re.sub(r"\\(.)", r"\1", handler).encode() in compiled
    assert (
        'f"DataLoader worker (pid(s) {pids_str}) exited unexpectedly"'
        in Path(torch_dataloader.__file__).read_text()
    )


@pytest.mark.parametrize("module", MODULES)
def test_a_dead_worker_is_reported_in_torchs_words(module: Any) -> None:
    """A worker that exits gives a RuntimeError with torch's two sentences, then stoker's account.

    A worker that exits gives a RuntimeError holding both of torch's sentences (its SIGCHLD
    handler's "DataLoader worker (pid N) exited unexpectedly with exit code 3. ..." and its
    liveness check's "DataLoader worker (pid(s) N) exited unexpectedly"), then stoker's
    account: the worker id, exit code and the indices it held. Only stoker's loader runs: which
    error torch's own loader raises for a dead worker depends on which of its pipes breaks first.
    """
    ours = _error(module, "exit")
    assert isinstance(ours, RuntimeError)
    assert re.search(_EXITED, str(ours))
    assert re.search(_EXITED_ANY, str(ours))
    assert "exit code 3" in str(ours)
    assert "indices [2]" in str(ours)


@pytest.mark.parametrize("module", MODULES)
def test_a_timeout_is_reported_in_torchs_words(module: Any) -> None:
    """A batch slower than timeout: RuntimeError "DataLoader timed out after 0.5 seconds"."""
    theirs = _error(torch_data, "sleep", timeout=0.5)
    ours = _error(module, "sleep", timeout=0.5)
    assert isinstance(ours, type(theirs))
    assert str(theirs) in str(ours)


def _local_init_fn(module: Any, **kwargs: Any) -> tuple[BaseException, list[str]]:
    def init(worker_id: int) -> None:  # local: cannot be pickled
        del worker_id

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = module.DataLoader(
            range(4), num_workers=1, worker_init_fn=init, multiprocessing_context="forkserver"
        )
        with pytest.raises(Exception) as raised:  # noqa: PT011 - compared with torch's below
            list(loader)
    return raised.value, [str(w.message) for w in caught]


@pytest.mark.parametrize("module", MODULES)
def test_a_local_worker_init_fn_under_forkserver_warns_and_raises_as_torch(module: Any) -> None:
    """Torch's pickle-error warning, then an error of pickle's type that says what to do.

    Torch's pickle-error warning, then an error of pickle's type (also a TypeError) whose
    message starts with pickle's and says what to do.
    """
    theirs, torch_warnings = _local_init_fn(torch_data)
    ours, our_warnings = _local_init_fn(module)
    assert isinstance(ours, type(theirs))
    assert isinstance(ours, TypeError)
    assert str(ours).startswith(str(theirs))
    assert "define them at module level" in str(ours)
    pickle_warning = next(text for text in torch_warnings if "pickle error" in text)
    assert pickle_warning in our_warnings


OUT_OF_FILES = (
    "Too many open files. Communication with the workers is no longer possible. Please "
    "increase the limit using `ulimit -n` in the shell or change the sharing strategy by "
    "calling `torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of "
    "your code"
)
"""torch's text (torch/utils/data/dataloader.py, _try_get_data) for running out of files."""


@pytest.mark.parametrize("module", ["stoker.data", "stoker.torch.data"])
def test_running_out_of_file_descriptors_gives_torchs_ulimit_advice(module: str) -> None:
    """Too few open files for the workers' pipes gives torch's RuntimeError and stoker's account.

    With the open-files limit too low for the workers' pipes, the error is torch's RuntimeError
    with its `ulimit -n` advice, then stoker's account of what holds descriptors.
    """
    code = f"""
import os, resource, sys
sys.path.insert(0, {SUPPORT!r})
import {module} as data
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 6, hard))
try:
    list(data.DataLoader(range(8), num_workers=4))
except RuntimeError as err:
    print(err)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert OUT_OF_FILES in result.stdout, result.stdout + result.stderr
    assert "limit of" in result.stdout


@pytest.mark.parametrize("module", ["torch.utils.data", "stoker.torch.data"])
def test_tensors_kept_past_the_file_limit_give_torchs_ulimit_advice(module: str) -> None:
    """Tensor batches kept past the open-files limit give torch's RuntimeError in both loaders.

    Tensors a dataset returns travel by torch's reductions, a descriptor each; keeping every
    batch alive under a limit of 100 open files makes the receive fail (``recvmsg`` drops the
    descriptor: "received 0 items of ancdata", no EMFILE), and the error is torch's RuntimeError
    with its ``ulimit -n`` advice, for torch's loader and the door alike (torch's
    test_fd_limit_exceeded).
    """
    code = f"""
import resource
import torch
import {module} as data

class Tensors(torch.utils.data.IterableDataset):
    def __iter__(self):
        return (torch.randn(2, 2) for _ in range(200))

kept = []
resource.setrlimit(resource.RLIMIT_NOFILE, (100, 100))
try:
    for batch in data.DataLoader(Tensors(), multiprocessing_context="fork", num_workers=1):
        kept.append(batch)
except RuntimeError as err:
    print(err)
print("kept", len(kept))
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert OUT_OF_FILES in result.stdout, result.stdout + result.stderr
