"""Public paths for public names: classes show ``stoker.data.DataLoader``, not the private module.

Each public package calls :func:`fixup_module_metadata` once, at the end of its ``__init__``,
with its ``__name__`` and namespace (the idea of trio's ``fixup_module_metadata``). Every name in
``__all__`` that was defined in a private module of that package gets ``__module__`` set to the
package, and its ``__qualname__`` checked, so reprs, tracebacks, ``help()`` and pickles name the
public path. Pickles stay loadable because the public package really exports the name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["fixup_module_metadata"]


def fixup_module_metadata(package: str, namespace: Mapping[str, Any]) -> None:
    """Point the ``__module__`` of every public name of ``package`` at ``package`` itself.

    Only objects defined inside ``package``'s own private modules are touched (an object
    re-exported from elsewhere keeps its module). Methods and nested classes of a public class
    are updated too, so ``stoker.data.DataLoader.__iter__`` reads as such.

    Args:
        package: the package's ``__name__``, e.g. ``"stoker.data"``.
        namespace: the package's ``globals()``; its ``__all__`` lists the public names.
    """
    seen: set[int] = set()

    def fix(obj: Any, qualname: str) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        module = getattr(obj, "__module__", None)
        if not isinstance(module, str) or not module.startswith(package + "."):
            return
        try:
            obj.__module__ = package
        except (AttributeError, TypeError):  # builtins and some C types refuse; keep theirs
            return
        if getattr(obj, "__qualname__", None) != qualname:
            return
        if isinstance(obj, type):
            for attr_name, attr in vars(obj).items():
                inner = getattr(attr, "__func__", attr)  # classmethod and staticmethod
                if callable(inner) or isinstance(inner, type):
                    fix(inner, f"{qualname}.{attr_name}")

    for name in namespace.get("__all__", ()):
        fix(namespace[name], name)
