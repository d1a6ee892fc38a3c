"""Warnings that point at the user's line: the first frame outside stoker.

A warning raised deep in the loader (``DataLoader.__init__`` -> its plan -> the pin plan, or an
iterator starting its workers) must name the line that made the loader or asked for the batch,
wherever the chain of stoker's own calls happens to be today. :func:`warn_at_caller` counts the
frames instead of taking a fixed ``stacklevel`` that the next refactoring silently breaks.
"""

from __future__ import annotations

import sys
import warnings

__all__ = ["caller_stacklevel", "warn_at_caller"]

_PACKAGE = __name__.partition(".")[0]


def _is_ours(module: object) -> bool:
    return isinstance(module, str) and (module == _PACKAGE or module.startswith(_PACKAGE + "."))


def caller_stacklevel() -> int:
    """Return the ``stacklevel`` that names the first frame outside stoker.

    It is the value the function calling this one passes to ``warnings.warn``: 1 names that
    function, 2 its caller, and so on up to the first frame whose module is not stoker's (with
    none, as under stoker's own command line, the outermost frame).
    """
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and _is_ours(frame.f_globals.get("__name__")):
        frame = frame.f_back
        level += 1
    return level


def warn_at_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn ``message`` at the first frame outside stoker (the user's line)."""
    warnings.warn(message, category, stacklevel=caller_stacklevel())
