"""The ``hello`` command: greets in reverse and shows a structural diff.

Wiring only: the string comes from :func:`stoker.morestrings.reverse_runes` and the report from
:func:`stoker.cmp.diff`.
"""

from __future__ import annotations

import sys

from stoker.cmp import diff
from stoker.morestrings import reverse_runes

__all__ = ["main"]


def main() -> int:
    """Print ``Hello, Go!`` and the diff of ``"Hello World"`` and ``"Hello Go"``; return 0."""
    sys.stdout.write(reverse_runes("!oG ,olleH") + "\n")
    sys.stdout.write(diff("Hello World", "Hello Go"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
