"""How the options of ``equal`` and ``diff`` combine: checks on the set, and what decides a pair.

Each constructor checks its own arguments; :func:`resolve` checks the set as a whole (an option
given twice, a comparer and a transformer for the same type) and returns the :class:`Settings` the
comparison walks with.

Which option decides a pair of values, first match wins:

1. ``ignore``: a matching path or type makes the pair equal and hides it from the report;
2. ``transformer`` / ``comparer``: the one whose type is most specific for the value's class
   (earliest in its ``__mro__``);
3. the built-in comparison, where ``approx`` and ``nan_equal`` change how floats, complex numbers
   and floating-point arrays compare, and ``sort_sequences`` orders lists and tuples first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from stoker.cmp._options import (
    ApproxOption,
    IgnoreOption,
    NanEqualOption,
    Option,
    SortOption,
    TypeOption,
)
from stoker.cmp._path import Step, format_path, matches

__all__ = ["Settings", "resolve"]


@dataclass
class Settings:
    """The options of one comparison, checked and gathered."""

    rel: float = 0.0
    abs: float = 0.0
    approx: bool = False
    nan_equal: bool = False
    sort: SortOption | None = None
    ignores: list[IgnoreOption] = field(default_factory=list)
    by_type: dict[type, TypeOption] = field(default_factory=dict)

    def ignored(self, path: tuple[Step, ...], x: object, y: object) -> bool:
        """Return whether the pair at ``path`` is left out of the comparison."""
        if not self.ignores:
            return False
        spelled: str | None = None
        for option in self.ignores:
            if option.types and (isinstance(x, option.types) or isinstance(y, option.types)):
                return True
            if any(matches(pattern, path) for pattern in option.patterns):
                return True
            if option.predicates:
                spelled = format_path(path) if spelled is None else spelled
                if any(predicate(spelled) for predicate in option.predicates):
                    return True
        return False

    def type_option(self, cls: type) -> TypeOption | None:
        """Return the comparer or transformer most specific to ``cls``, if any."""
        if not self.by_type:
            return None
        for base in cls.__mro__:
            found = self.by_type.get(base)
            if found is not None:
                return found
        return None


def resolve(options: Iterable[object]) -> Settings:
    """Check ``options`` as a set and gather them into :class:`Settings`.

    Raises:
        TypeError: if an item is not an option made by this module's constructors.
        ValueError: if options contradict each other: ``approx`` or ``sort_sequences`` given
            twice, or two comparers/transformers for the same type.
    """
    settings = Settings()
    for option in options:
        if not isinstance(option, Option):
            raise TypeError(
                f"options must be made by approx(), nan_equal(), ignore(), sort_sequences(), "
                f"comparer() or transformer(), got {option!r} of type {type(option).__name__}"
            )
        if isinstance(option, ApproxOption):
            if settings.approx:
                raise ValueError(
                    f"approx may be given once, got a second one: {option!r}; "
                    "keep the one tolerance you mean"
                )
            settings.approx, settings.rel, settings.abs = True, option.rel, option.abs
        elif isinstance(option, NanEqualOption):
            settings.nan_equal = True
        elif isinstance(option, SortOption):
            if settings.sort is not None:
                raise ValueError(
                    f"sort_sequences may be given once, got {settings.sort!r} and {option!r}; "
                    "keep one"
                )
            settings.sort = option
        elif isinstance(option, IgnoreOption):
            settings.ignores.append(option)
        elif isinstance(option, TypeOption):
            for cls in option.types:
                clash = settings.by_type.get(cls)
                if clash is not None:
                    raise ValueError(
                        f"type {cls.__qualname__} may have one comparer or transformer, got "
                        f"{clash!r} and {option!r}; combine them into one"
                    )
                settings.by_type[cls] = option
    return settings
