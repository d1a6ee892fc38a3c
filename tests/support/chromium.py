"""Headless Chromium for tests: the binary, its flags, and a page driven over DevTools.

Headless Chromium for tests: the binary, the flags that work here, and one page driven over
the Chrome DevTools Protocol.

``Page(profile)`` starts Chromium with ``--remote-debugging-port=0`` and a fresh profile folder,
reads the port Chromium chose from the profile's ``DevToolsActivePort`` file, and talks to its
one tab over a websocket (``websocket-client``): ``load(url)`` opens a page afresh,
``evaluate(js)`` runs JavaScript in it and returns the value, ``until(js, done)`` evaluates until
``done(value)`` holds or a deadline passes, ``screenshot(path)`` writes a PNG once the page stops
changing. ``SNAPSHOT`` is JavaScript that walks a page the way a person reads it, into shadow
roots and same-origin frames, which ``--dump-dom`` does not: TensorBoard's dashboards live in
shadow DOM. Chromium is terminated (then killed) and reaped on ``close``, on every path.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest
import websocket

# Flags for a headless run as root on a machine with no network but loopback.
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
START_TIMEOUT = 30.0
CALL_TIMEOUT = 30.0
WAIT_TIMEOUT = 45.0
SETTLE_TIMEOUT = 15.0

# Everything a page shows, shadow roots and same-origin frames included: text nodes in order
# (styles and scripts left out), and each image, audio element, canvas and frame.
SNAPSHOT = """(() => {
  const text = [], images = [], audio = [], canvases = [], lines = [], frames = [];
  const walk = (node) => {
    if (node.nodeType === Node.TEXT_NODE) {
      const t = node.textContent.trim();
      if (t) text.push(t);
      return;
    }
    if (node.nodeType === Node.ELEMENT_NODE) {
      const tag = node.tagName;
      if (tag === "STYLE" || tag === "SCRIPT" || tag === "NOSCRIPT") return;
      if (tag === "IMG") images.push({src: node.src, width: node.naturalWidth,
                                      height: node.naturalHeight, complete: node.complete});
      if (tag === "AUDIO") audio.push({src: node.src, readyState: node.readyState,
                                       duration: node.duration});
      if (tag === "CANVAS") canvases.push({width: node.width, height: node.height});
      if (tag === "path" && node.classList.contains("line")) {
        lines.push((node.getAttribute("d") || "").length);
      }
      if (tag === "IFRAME") {
        frames.push(node.src);
        if (node.contentDocument && node.contentDocument.body) walk(node.contentDocument.body);
      }
      if (node.shadowRoot) walk(node.shadowRoot);
    }
    for (const child of node.childNodes) walk(child);
  };
  if (document.body) walk(document.body);  // null while a page starts loading
  return {text, images, audio, canvases, lines, frames};
})()"""


def binary() -> str:
    """Return the Chromium binary; fail (not skip) with how to install it when missing."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(
            "chromium is not installed; `apt-get install chromium` (make test does this as root)"
        )
    return found


class Page:
    """One headless Chromium with one tab, driven over the DevTools Protocol."""

    def __init__(self, profile: Path, *, width: int = 1400, height: int = 1000) -> None:
        profile.mkdir(parents=True, exist_ok=False)  # a fresh profile: no stale port file
        self._ids = itertools.count(1)
        self._stderr = (profile.parent / f"{profile.name}.stderr").open("wb")
        command = [
            binary(), *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
            f"--window-size={width},{height}", "about:blank",
        ]  # fmt: skip
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self._stderr)
        try:
            port = self._port(profile / "DevToolsActivePort")
            self._socket = websocket.create_connection(
                self._tab(port), timeout=CALL_TIMEOUT, suppress_origin=True
            )
            self.call("Page.enable")
            self.call(
                "Emulation.setDeviceMetricsOverride",
                width=width, height=height, deviceScaleFactor=1, mobile=False,
            )  # fmt: skip
        except BaseException:
            self._stop()
            raise

    def __enter__(self) -> Page:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def _alive(self) -> None:
        if self._process.poll() is not None:
            raise RuntimeError(f"chromium exited with status {self._process.returncode}")

    def _port(self, port_file: Path) -> int:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            self._alive()
            lines = port_file.read_text().splitlines() if port_file.exists() else []
            if len(lines) >= 2:  # the port, then the browser's websocket path
                return int(lines[0])
            if time.monotonic() > deadline:
                raise RuntimeError(f"chromium wrote no {port_file} within {START_TIMEOUT} s")
            time.sleep(0.05)

    def _tab(self, port: int) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            self._alive()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                    targets = json.load(r)
            except (urllib.error.URLError, ConnectionError):
                targets = []  # not answering yet
            pages = [t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page"]
            if pages:
                address: str = pages[0]
                return address
            if time.monotonic() > deadline:
                raise RuntimeError(f"chromium opened no tab within {START_TIMEOUT} s")
            time.sleep(0.05)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events in between are dropped)."""
        number = next(self._ids)
        self._socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv())
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result

    def load(self, url: str) -> None:
        """Open ``url`` as a new document (a blank page first, so a change of ``#`` reloads)."""
        self.call("Page.navigate", url="about:blank")
        self.call("Page.navigate", url=url)

    def evaluate(self, expression: str) -> Any:
        """Evaluate ``expression`` in the page (promises awaited); return its value as JSON."""
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]!r} raised: {result['exceptionDetails']}")
        return result["result"].get("value")

    def until(
        self, expression: str, done: Callable[[Any], bool], timeout: float = WAIT_TIMEOUT
    ) -> tuple[Any, bool]:
        """Evaluate ``expression`` until ``done(value)`` or ``timeout``; return value and outcome.

        Evaluate ``expression`` until ``done(value)`` or ``timeout`` seconds pass; return the
        last value and whether ``done`` held.
        """
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if done(value):
                return value, True
            if time.monotonic() > deadline:
                return value, False
            time.sleep(0.25)

    def screenshot(self, path: Path, *, settle: float = SETTLE_TIMEOUT) -> bool:
        """Write what the tab shows as a PNG at ``path`` once it stops changing.

        Write what the tab shows as a PNG at ``path`` once two captures half a second apart
        agree (charts drawn off the page's thread give no other sign), or after ``settle``
        seconds; return whether they agreed.
        """
        deadline = time.monotonic() + settle
        previous = self.call("Page.captureScreenshot", format="png")["data"]
        while True:
            time.sleep(0.5)
            current = self.call("Page.captureScreenshot", format="png")["data"]
            if current == previous or time.monotonic() > deadline:
                path.write_bytes(base64.b64decode(current))
                return current == previous
            previous = current

    def close(self) -> None:
        """Close the websocket and end Chromium; it is reaped on every path."""
        try:
            self._socket.close()
        finally:
            self._stop()

    def _stop(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)
        self._stderr.close()
