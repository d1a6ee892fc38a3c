"""Shorten a list of report entries: keep the differences, elide long runs of equal ones.

Entries come in runs of equal (or ignored) entries and runs of differing ones. Each equal run
keeps up to :data:`CONTEXT` entries next to a neighbouring difference and turns the rest into one
``... // 4 identical fields`` record; eliding a single entry would save nothing, so it is shown
instead. Ignored entries are never shown, only counted. After :data:`MAX_DIFFS` differing entries
have been shown, everything left is summed into one closing ``...`` record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stoker.cmp._text import Rec, ellipsis

__all__ = ["CONTEXT", "MAX_DIFFS", "Entry", "Tally", "elide"]

#: Equal entries shown on each side of a difference.
CONTEXT = 2
#: Differing entries shown in one block before the rest are counted instead.
MAX_DIFFS = 16

_ORDER = ("ignored", "identical", "removed", "inserted", "modified")


@dataclass
class Tally:
    """Counts of elided entries by state, spelled ``2 identical and 1 ignored fields``."""

    name: str
    ignored: int = 0
    identical: int = 0
    removed: int = 0
    inserted: int = 0
    modified: int = 0

    def add(self, state: str, count: int = 1) -> None:
        """Count ``count`` more entries in ``state`` (one of the field names)."""
        setattr(self, state, getattr(self, state) + count)

    def __str__(self) -> str:
        counts = [(getattr(self, label), label) for label in _ORDER]
        parts = [f"{n} {label}" for n, label in counts if n]
        total = sum(n for n, _ in counts)
        name = self.name
        if total > 1:
            name = name[:-1] + "ies" if name.endswith("y") else name + "s"
        if len(parts) <= 2:
            return " and ".join(parts) + " " + name
        return ", ".join(parts[:-1]) + ", and " + parts[-1] + " " + name

    def __bool__(self) -> bool:
        return any(getattr(self, label) for label in _ORDER)


@dataclass
class Entry:
    """One entry: its state (a :class:`Tally` field name) and how to make its records."""

    state: str
    make: Callable[[], list[Rec]]

    @property
    def differs(self) -> bool:
        """Whether the entry is a difference (not identical, not ignored)."""
        return self.state not in ("identical", "ignored")


def _runs(entries: list[Entry]) -> list[list[Entry]]:
    """Split ``entries`` into maximal runs that all differ or all do not."""
    runs: list[list[Entry]] = []
    for entry in entries:
        if runs and runs[-1][0].differs == entry.differs:
            runs[-1].append(entry)
        else:
            runs.append([entry])
    return runs


def _context(run: list[Entry], first: bool, last: bool) -> tuple[int, int]:
    """Return how many entries of an equal run to show at its start and at its end."""
    low = high = 0
    if not first:
        while low < min(CONTEXT, len(run)) and run[low].state == "identical":
            low += 1
    if not last:
        while (
            high < CONTEXT
            and low + high < len(run)
            and run[len(run) - 1 - high].state == "identical"
        ):
            high += 1
    hidden = run[low : len(run) - high]
    if len(hidden) == 1 and hidden[0].state == "identical":
        high += 1
    return low, high


def elide(entries: list[Entry], name: str, max_diffs: int = MAX_DIFFS) -> list[Rec]:
    """Return the records of ``entries`` with long equal runs elided and a cap on differences.

    >>> from stoker.cmp._text import Line
    >>> same = [Entry("identical", lambda i=i: [Rec(Line(str(i)))]) for i in range(6)]
    >>> recs = elide([*same, Entry("removed", lambda: [Rec(Line("9"), "-")])], "element")
    >>> [(r.mark, r.value, r.comment) for r in recs][:2]
    [(' ', Line(text='...'), '4 identical elements'), (' ', Line(text='4'), None)]
    """
    recs: list[Rec] = []
    runs = _runs(entries)
    shown = 0
    rest = Tally(name)
    for number, run in enumerate(runs):
        if shown >= max_diffs:
            for entry in run:
                rest.add(entry.state)
            continue
        if run[0].differs:
            for entry in run:
                recs.extend(entry.make())
            shown += len(run)
            continue
        low, high = _context(run, number == 0, number == len(runs) - 1)
        for entry in run[:low]:
            recs.extend(entry.make())
        hidden = Tally(name)
        for entry in run[low : len(run) - high]:
            hidden.add(entry.state)
        if hidden:
            recs.append(ellipsis(str(hidden)))
        for entry in run[len(run) - high :]:
            recs.extend(entry.make())
    if rest:
        recs.append(ellipsis(str(rest)))
    return recs
