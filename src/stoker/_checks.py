"""Shared argument checks: an int validator, an environment-int reader, a rank resolver.

Also whether a method can be called with no argument (``callable_without_arguments``: the
loader's ``state_dict()`` contracts and the workers' dataset hooks ask it).

Every part of stoker that takes an integer argument, reads an integer from the environment
(``RANK``, ``WORLD_SIZE``, ``STOKER_*`` settings) or needs this process's rank goes through here,
so the same mistake gets the same message wherever it is made.
"""

from __future__ import annotations

import inspect
import os
from typing import Any, Literal, overload

import numpy as np

from stoker import _torch

__all__ = ["callable_without_arguments", "check_int", "env_int", "resolve_world", "torch_first"]


def torch_first(torch_text: str, ours: str) -> str:
    """Join torch's message and stoker's explanation of it, torch's first.

    Every error and warning torch also gives says torch's words first, so that code matching
    torch's message keeps working, then what was wrong and how to fix it: after torch's
    sentences (text that ends with ``.``, ``!`` or ``?``) as ``" (stoker: ...)"``, after a
    clause as ``": ..."`` (or after a space where torch's ends with ``:``, ``;`` or ``,``).
    Without torch's text, stoker's alone.
    """
    torch_text = torch_text.rstrip()
    if not torch_text:
        return ours
    if torch_text.endswith((".", "!", "?")):
        return f"{torch_text} (stoker: {ours})"
    if torch_text.endswith((":", ";", ",")):
        return f"{torch_text} {ours}"
    return f"{torch_text}: {ours}"


@overload
def check_int(
    value: Any,
    name: str,
    *,
    minimum: int | None = None,
    allow_none: Literal[False] = False,
    source: str | None = None,
    hint: str = "",
    torch_text: str = "",
) -> int: ...


@overload
def check_int(
    value: Any,
    name: str,
    *,
    minimum: int | None = None,
    allow_none: bool,
    source: str | None = None,
    hint: str = "",
    torch_text: str = "",
) -> int | None: ...


def check_int(
    value: Any,
    name: str,
    *,
    minimum: int | None = None,
    allow_none: bool = False,
    source: str | None = None,
    hint: str = "",
    torch_text: str = "",
) -> int | None:
    """Return ``value`` as a plain ``int`` (or None when allowed) or raise a clear error.

    ``bool`` is rejected (it is an ``int`` subclass but never means a count); NumPy integers
    and other ``__index__`` types are accepted.

    Args:
        value: the value received.
        name: the parameter's name, for the message.
        minimum: the smallest valid value, if any.
        allow_none: accept None (and return it).
        source: where the value came from, when it was not an argument (``"$RANK"``).
        hint: how to fix it, appended to the message.
        torch_text: torch's message for a value below ``minimum``, put first.

    Returns:
        The value as an ``int``, or None.

    Raises:
        TypeError: if ``value`` is not an int.
        ValueError: if it is below ``minimum``.
    """
    if value is None and allow_none:
        return None
    origin = "" if source is None else f" from {source}"
    tail = f"; {hint}" if hint else ""
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
        none = " or None" if allow_none else ""
        raise TypeError(
            f"{name} must be an int{none}, got {value!r} of type {type(value).__name__}"
            f"{origin}{tail}"
        )
    number = int(value.__index__())
    if minimum is not None and number < minimum:
        raise ValueError(
            torch_first(torch_text, f"{name} must be >= {minimum}, got {number!r}{origin}{tail}")
        )
    return number


def env_int(variable: str, *, minimum: int | None = None, hint: str = "") -> int | None:
    """Read an integer environment variable; None when it is unset or empty.

    Raises:
        ValueError: if it is set to something that is not an int, or below ``minimum``.
    """
    text = os.environ.get(variable, "").strip()
    if not text:
        return None
    fix = hint or f"unset it or pass {variable.lower()}= explicitly"
    try:
        value = int(text)
    except ValueError as err:
        raise ValueError(
            f"environment variable {variable} must be an int, got {text!r}; {fix}"
        ) from err
    return check_int(value, variable.lower(), minimum=minimum, source=f"${variable}", hint=fix)


def resolve_world(
    rank: int | None = None,
    world_size: int | None = None,
    *,
    hint: str = "",
    check_order: bool = True,
) -> tuple[int | None, int | None]:
    """Return ``(rank, world_size)``, each from its argument, else torch, else the environment.

    Each value comes from its argument when given; else from an initialised ``torch.distributed``
    process group (only when the program imported it); else from ``RANK`` / ``WORLD_SIZE``;
    else None. Callers apply their own default to a None (a writer assumes rank 0; a
    ``DistributedSampler`` raises, as torch's does). ``check_order=False`` leaves the check of
    the rank's range (not negative, below the world size) to the caller, which may owe torch's
    own message.

    Raises:
        TypeError: if an argument is not an int.
        ValueError: if a value is negative, the world size is below 1, an environment variable
            is not an int, or the rank is not below the world size.
    """
    lowest_rank = 0 if check_order else None
    found_rank: int | None = check_int(
        rank, "rank", minimum=lowest_rank, allow_none=True, hint=hint
    )
    found_size: int | None = check_int(
        world_size, "world_size", minimum=1, allow_none=True, hint=hint
    )
    if found_rank is None or found_size is None:
        group = _torch.process_group()
        if group is not None:
            found_rank = group[0] if found_rank is None else found_rank
            found_size = group[1] if found_size is None else found_size
    if found_rank is None:
        found_rank = env_int("RANK", minimum=lowest_rank, hint=hint)
    if found_size is None:
        found_size = env_int("WORLD_SIZE", minimum=1, hint=hint)
    known = found_rank is not None and found_size is not None
    if check_order and known and found_rank >= found_size:  # type: ignore[operator]
        raise ValueError(
            f"rank must be below world_size ({found_size}), got {found_rank}; check RANK and "
            "WORLD_SIZE or the arguments"
        )
    return found_rank, found_size


def callable_without_arguments(method: Any) -> bool:
    """Whether ``method()`` binds: no required parameter (what stoker's loader calls)."""
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):  # no signature to read (a builtin): take it at its word
        return callable(method)
    try:
        signature.bind()
    except TypeError:
        return False
    return True
