"""``stoker board``: TensorBoard's web page on stoker's data server, and both ended together.

The command picks a free port for the data server, starts TensorBoard's web server against it
(``tensorboard --grpc_data_provider HOST:PORT``, plus ``--logdir`` for a local log dir so that
the projector, which reads files itself, keeps working), reads the log dir meanwhile, starts
serving, and prints the page's URL once TensorBoard answers on its port. TensorBoard runs in a
process group of its own, ended on every way out: Ctrl-C (exit status 0), SIGTERM or SIGHUP
(128 + the signal's number, as a shell reports it), an error, or TensorBoard exiting by itself
(its own status). On Linux it is also told to end if this process is killed outright.
``--data-server-only`` serves the data alone and prints the flag to give TensorBoard.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from stoker.tensorboard import EventFileError

if TYPE_CHECKING:
    from stoker.board import DataServer

__all__ = ["main", "serve"]

_PR_SET_PDEATHSIG = 1  # prctl option, from <linux/prctl.h>
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_READY_SECONDS = 120.0  # TensorBoard's imports take seconds on a busy machine


class _Stopped(Exception):
    """SIGTERM or SIGHUP arrived while serving."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask Linux to send SIGTERM to this process when its parent dies (even by SIGKILL)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """End TensorBoard and everything it started through their process group."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # a child outliving its parent


@contextlib.contextmanager
def _stop_signals() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into :class:`_Stopped` here, restoring the handlers after."""
    previous = {sig: signal.signal(sig, _raise_stopped) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig in _STOP_SIGNALS:  # a second signal must not cut the clean-up short
            signal.signal(sig, signal.SIG_IGN)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _answers(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1.0):
        return True
    return False


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def _tensorboard_missing(command: str) -> bool:
    if importlib.util.find_spec("tensorboard") is None or importlib.util.find_spec("grpc") is None:
        sys.stderr.write(
            f"{command}: needs the tensorboard package (and grpcio, which it brings); install "
            "it with `pip install 'stoker[tensorboard]'`\n"
        )
        return True
    return False


def _start_tensorboard(
    logdir: str, address: str, host: str, port: int, extra: Sequence[str]
) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "tensorboard.main", "--grpc_data_provider", address]
    if "://" not in logdir:  # the projector reads local files itself
        command += ["--logdir", logdir]
    command += ["--host", host, "--port", str(port), *extra]
    return subprocess.Popen(
        command,
        start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509 - prctl only, before exec
    )


def _wait_for_page(process: subprocess.Popen[bytes], host: str, port: int) -> int | None:
    """Wait until TensorBoard answers on its port; return its exit status if it ended first."""
    deadline = time.monotonic() + _READY_SECONDS
    while not _answers(host, port):
        if process.poll() is not None:
            return process.returncode
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"TensorBoard did not answer on {host}:{port} within {_READY_SECONDS:.0f} s"
            )
        time.sleep(0.1)
    return None


def _read(logdir: str, host: str, port: int, reload_interval: float) -> DataServer:
    from stoker.board import DataServer  # noqa: PLC0415 - needs the tensorboard extra

    started = time.monotonic()
    server = DataServer(logdir, host=host, port=port, reload_interval=reload_interval)
    runs = server.provider.run_count
    sys.stderr.write(
        f"stoker board: read {runs:,} run{'s' if runs != 1 else ''} of {logdir} in "
        f"{time.monotonic() - started:.1f} s\n"
    )
    return server


def serve(
    logdir: str,
    *,
    host: str = "127.0.0.1",
    port: int = 6006,
    reload_interval: float = 5.0,
    data_server_only: bool = False,
    tensorboard_args: Sequence[str] = (),
    command: str = "stoker board",
) -> int:
    """Serve ``logdir`` until interrupted; return the exit status (see the module docstring)."""
    if _tensorboard_missing(command):
        return 2
    process: subprocess.Popen[bytes] | None = None
    server: DataServer | None = None
    with _stop_signals():
        try:
            data_port = _free_port(host)
            if not data_server_only:
                process = _start_tensorboard(
                    logdir, f"{host}:{data_port}", host, port, tensorboard_args
                )
            server = _read(logdir, host, data_port, reload_interval).start()
            if process is None:
                sys.stdout.write(f"--grpc_data_provider={server.address}\n")
                sys.stdout.flush()
                server.wait()
                return 0
            ended = _wait_for_page(process, host, port)
            if ended is None:
                sys.stdout.write(f"TensorBoard at {_url(host, port)} (Ctrl-C stops it)\n")
                sys.stdout.flush()
                ended = process.wait()
            if ended:
                sys.stderr.write(f"{command}: tensorboard exited with status {ended}\n")
            return ended
        except KeyboardInterrupt:
            return 0
        except _Stopped as stopped:
            return 128 + stopped.signum
        except (EventFileError, RuntimeError, ValueError) as err:
            sys.stderr.write(f"{command}: {err}\n")
            return 2
        finally:
            if process is not None:
                _stop_group(process)
            if server is not None:
                server.stop(grace=0)


def main(args: argparse.Namespace) -> int:
    """Run ``stoker board`` with parsed arguments."""
    return serve(
        args.logdir,
        host=args.host,
        port=args.port,
        reload_interval=args.reload_interval,
        data_server_only=args.data_server_only,
        tensorboard_args=args.tensorboard_args,
    )
