"""``stoker board``: TensorBoard's web page on stoker's data server, and both ended together.

The command checks that the page's port is free, picks free ports on 127.0.0.1 for the data
server and for TensorBoard's web server, starts TensorBoard's web server against the data server
(``tensorboard --grpc_data_provider HOST:PORT``, plus ``--logdir`` for a local log dir so that
the projector, which reads files itself, keeps working), reads the log dir meanwhile, starts
serving, and once TensorBoard answers as the page of this data server starts the page server
(:class:`stoker.board.PageServer`: the scalar routes answered from the reader's columns, every other
request passed to TensorBoard) on the page's address and prints its URL. TensorBoard runs in a
process group of its own, ended on every way out: Ctrl-C (exit status 0), SIGTERM or SIGHUP
(128 + the signal's number, as a shell reports it), an error, or TensorBoard exiting by itself
(its own status). On Linux it is also told to end if this process is killed outright.

TensorBoard's stderr passes through this process line by line, less the two lines that
``stoker board``'s own line replaces (its URL banner and the note that TensorFlow is not
installed) and, once this process stops it, its note that it caught SIGTERM.
``--data-server-only`` serves the data alone and prints the flag to give TensorBoard.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any, cast

from stoker.tensorboard import EventFileError

if TYPE_CHECKING:
    from stoker.board import DataServer, PageServer

__all__ = ["main", "serve"]

_PR_SET_PDEATHSIG = 1  # prctl option, from <linux/prctl.h>
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_READY_SECONDS = 120.0  # TensorBoard's imports take seconds on a busy machine
_DATA_HOST = "127.0.0.1"  # only the TensorBoard started here connects to the data server
# TensorBoard's stderr lines that stoker board's own URL line replaces.
_BANNERS = re.compile(
    rb"TensorFlow installation not found - running with reduced feature set\.\r?\n"
    rb"|TensorBoard \S+ at \S+ \(Press CTRL\+C to quit\)\r?\n"
)
_CAUGHT_SIGTERM = re.compile(rb"TensorBoard caught SIGTERM; exiting\.\.\.\r?\n")


class _Stopped(Exception):
    """SIGTERM or SIGHUP arrived while serving."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def _die_with(parent: int) -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask Linux to send SIGTERM to this process when ``parent`` dies (even by SIGKILL).

    End now if it died before the request was made.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os._exit(128 + signal.SIGTERM)


class _Stderr:
    """Forwards TensorBoard's stderr to this process's, less its banner lines.

    From :meth:`start` on, a line is forwarded as soon as it is complete; a thread of its own
    reads the pipe until TensorBoard's end closes it. It is started once the log dir is read:
    the reader forks its workers only in a process without other threads, and until then what
    TensorBoard writes waits in the pipe (a pipe holds 64 KiB; TensorBoard's start-up writes a
    few lines).
    """

    def __init__(self, pipe: IO[bytes]) -> None:
        self._pipe = pipe
        self.stopping = False  # set before this process sends TensorBoard SIGTERM
        self._thread = threading.Thread(target=self._forward, name="tensorboard-stderr")
        self._thread.daemon = True  # never keeps this process alive

    def start(self) -> None:
        """Start forwarding (once)."""
        if self._thread.ident is None:
            self._thread.start()

    def _forward(self) -> None:
        out = getattr(sys.stderr, "buffer", None)
        for line in iter(self._pipe.readline, b""):
            if _BANNERS.fullmatch(line) or (self.stopping and _CAUGHT_SIGTERM.fullmatch(line)):
                continue
            with contextlib.suppress(OSError, ValueError):  # this process's stderr is gone
                if out is not None:
                    out.write(line)
                    out.flush()
                else:
                    sys.stderr.write(line.decode(errors="replace"))
                    sys.stderr.flush()

    def join(self) -> None:
        """Wait (a bounded time) until everything TensorBoard wrote is forwarded."""
        self.start()
        self._thread.join(timeout=10.0)
        if not self._thread.is_alive():
            self._pipe.close()


class _TensorBoard:
    """TensorBoard's web server as a child process in a session (and process group) of its own."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=(  # noqa: PLW1509 - prctl only, before exec
                functools.partial(_die_with, os.getpid()) if sys.platform == "linux" else None
            ),
        )
        self.stderr = _Stderr(cast("IO[bytes]", self.process.stderr))

    def ended(self) -> int | None:
        """Its exit status once it ended by itself, its stderr forwarded; else None."""
        if self.process.poll() is None:
            return None
        self.stderr.join()
        return self.process.returncode

    def wait(self) -> int:
        """Wait until it ends; return its exit status once its stderr is forwarded."""
        self.process.wait()
        self.stderr.join()
        return self.process.returncode

    def stop(self) -> None:
        """End it and everything it started through their process group."""
        self.stderr.stopping = True
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # a child outliving its parent
        self.stderr.join()


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _check_port_free(host: str, port: int) -> None:
    """Raise OSError if TensorBoard could not listen on ``host:port`` (binding as it binds)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen()


def _url(host: str, port: int, prefix: str = "") -> str:
    where = f"[{host}]" if ":" in host else host
    return f"http://{where}:{port}{prefix}/"


def _path_prefix(flags: Sequence[str]) -> str:
    """The ``--path_prefix`` among TensorBoard's flags, less its trailing slash.

    The trailing slash is dropped as TensorBoard takes it (one without a leading slash
    TensorBoard refuses).
    """
    prefix = ""
    for index, flag in enumerate(flags):
        if flag.startswith("--path_prefix="):
            prefix = flag.partition("=")[2]
        elif flag == "--path_prefix" and index + 1 < len(flags):
            prefix = flags[index + 1]
    return prefix.rstrip("/")


_OWN_FLAGS = {
    "--logdir": "give the log dir as stoker board's LOGDIR",
    "--logdir_spec": "give the log dir as stoker board's LOGDIR",
    "--grpc_data_provider": "stoker board starts its own data server",
    "--host": "give --host before --",
    "--port": "give --port before --",
    "--bind_all": "give --host 0.0.0.0 before --",
}
"""TensorBoard flags that stoker board sets itself, and what to do instead."""


def _own_flag(flags: Sequence[str]) -> str | None:
    """The message refusing the first of TensorBoard's ``flags`` that stoker board sets itself.

    None when there is none.
    """
    for flag in flags:
        advice = _OWN_FLAGS.get(flag.partition("=")[0])
        if advice is not None:
            return f"{flag!r} after -- is a flag stoker board gives TensorBoard itself: {advice}"
    return None


def _environment(url: str, address: str) -> dict[str, Any] | None:
    """TensorBoard's ``/data/environment`` at ``url``, if it is the data server's page.

    None while it is not up, or when it is the page of another data server than ``address``:
    its environment names its flags, and a TensorBoard that names none is taken.
    """
    try:
        with urllib.request.urlopen(f"{url}data/environment", timeout=2.0) as answer:
            environment = json.loads(answer.read())
    except (OSError, ValueError):  # not up yet, or not TensorBoard
        return None
    if not isinstance(environment, dict):
        return None
    flags = environment.get("debug", {}).get("flags", {})
    if isinstance(flags, dict) and flags.get("grpc_data_provider", address) != address:
        return None
    return environment


def _samples(environment: dict[str, Any]) -> int | None:
    """The scalar points per series TensorBoard keeps (``--samples_per_plugin scalars=N``).

    None when its environment does not say (TensorBoard's default then).
    """
    flags = environment.get("debug", {}).get("flags", {})
    hints = flags.get("samples_per_plugin") if isinstance(flags, dict) else None
    samples = hints.get("scalars") if isinstance(hints, dict) else None
    if isinstance(samples, int) and not isinstance(samples, bool) and samples >= 0:
        return samples
    return None


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
) -> _TensorBoard:
    command = [sys.executable, "-m", "tensorboard.main", "--grpc_data_provider", address]
    if "://" not in logdir:  # the projector reads local files itself
        command += ["--logdir", logdir]
    command += ["--host", host, "--port", str(port), *extra]
    return _TensorBoard(command)


def _wait_for_page(
    tensorboard: _TensorBoard, url: str, address: str
) -> tuple[int | None, dict[str, Any]]:
    """Wait until TensorBoard serves its page.

    Returns its exit status if it ended first (else None), and its environment.
    """
    deadline = time.monotonic() + _READY_SECONDS
    while (environment := _environment(url, address)) is None:
        ended = tensorboard.ended()
        if ended is not None:
            return ended, {}
        if time.monotonic() > deadline:
            raise RuntimeError(f"TensorBoard did not answer at {url} within {_READY_SECONDS:.0f} s")
        time.sleep(0.1)
    return None, environment


def _read(logdir: str, host: str, port: int, reload_interval: float, command: str) -> DataServer:
    from stoker.board import DataServer  # noqa: PLC0415 - needs the tensorboard extra

    started = time.monotonic()
    server = DataServer(logdir, host=host, port=port, reload_interval=reload_interval)
    runs = server.provider.run_count
    sys.stderr.write(
        f"{command}: read {runs:,} run{'s' if runs != 1 else ''} of {logdir} in "
        f"{time.monotonic() - started:.1f} s\n"
    )
    return server


def _page(
    server: DataServer, inner_port: int, host: str, port: int, *, prefix: str, samples: int | None,
    command: str,
) -> PageServer | None:  # fmt: skip
    """Start the page server on ``host:port`` in front of TensorBoard; None if it cannot listen.

    (The port was free when the command started; something may have taken it since.)
    """
    from stoker.board import PageServer  # noqa: PLC0415 - the tensorboard extra's

    try:
        page = PageServer(server.provider, (_DATA_HOST, inner_port), host=host, port=port,
                          path_prefix=prefix, samples=samples)  # fmt: skip
    except OSError as err:
        sys.stderr.write(
            f"{command}: cannot listen on {host}:{port}: {err.strerror or err}; "
            "stop what uses that port or pick another with --port\n"
        )
        return None
    return page.start()


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
    """Serve ``logdir`` until interrupted; return the exit status (see the module docstring).

    Args:
        logdir: A log directory, an event file, or a URL (``s3://bucket/prefix``).
        host: The address TensorBoard's page (or, with ``data_server_only``, the data
            server) listens on.
        port: TensorBoard's port.
        reload_interval: Seconds between reads of new data, 0 for none.
        data_server_only: Serve the data alone and print the flag to give TensorBoard.
        tensorboard_args: More flags for TensorBoard.
        command: The command's name in messages.
    """
    if data_server_only and tensorboard_args:
        sys.stderr.write(
            f"{command}: flags after -- go to TensorBoard, which --data-server-only does not "
            f"start (got {' '.join(tensorboard_args)!r}); give them to your tensorboard\n"
        )
        return 2
    refused = _own_flag(tensorboard_args)
    if refused is not None:
        sys.stderr.write(f"{command}: {refused}\n")
        return 2
    if _tensorboard_missing(command):
        return 2
    tensorboard: _TensorBoard | None = None
    server: DataServer | None = None
    page: PageServer | None = None
    previous = {sig: signal.signal(sig, _raise_stopped) for sig in _STOP_SIGNALS}
    try:
        if data_server_only:
            server = _read(logdir, host, 0, reload_interval, command).start()
            sys.stdout.write(f"--grpc_data_provider={server.address}\n")
            sys.stdout.flush()
            server.wait()
            return 0
        try:
            _check_port_free(host, port)
        except OSError as err:
            sys.stderr.write(
                f"{command}: TensorBoard cannot listen on {host}:{port}: {err.strerror or err}; "
                "stop what uses that port or pick another with --port\n"
            )
            return 1
        data_port = _free_port(_DATA_HOST)
        address = f"{_DATA_HOST}:{data_port}"
        inner_port = _free_port(_DATA_HOST)  # TensorBoard's own, behind the page server
        tensorboard = _start_tensorboard(logdir, address, _DATA_HOST, inner_port, tensorboard_args)
        server = _read(logdir, _DATA_HOST, data_port, reload_interval, command).start()
        tensorboard.stderr.start()  # after the read: its workers fork from a one-thread process
        prefix = _path_prefix(tensorboard_args)
        ended, environment = _wait_for_page(
            tensorboard, _url(_DATA_HOST, inner_port, prefix), address
        )
        if ended is None:
            page = _page(server, inner_port, host, port, prefix=prefix,
                         samples=_samples(environment), command=command)  # fmt: skip
            if page is None:
                return 1
            sys.stdout.write(f"TensorBoard at {_url(host, port, prefix)} (Ctrl-C stops it)\n")
            sys.stdout.flush()
            ended = tensorboard.wait()
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
        # A second signal (or Ctrl-C) must not cut the clean-up short.
        previous[signal.SIGINT] = signal.getsignal(signal.SIGINT)
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)
        if page is not None:
            page.stop()
        if tensorboard is not None:
            tensorboard.stop()
        if server is not None:
            server.stop(grace=0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


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
