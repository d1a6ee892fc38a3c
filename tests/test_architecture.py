"""The shape of src/: one torch boundary, no import circle, no reach into another module's privates.

These read the source with :mod:`ast` (nothing is imported), so they hold for code paths the
other tests never run: imports inside functions and under ``TYPE_CHECKING`` count like any other.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# The only package of the torch-free parts that may look at torch (DESIGN.md, decision 2).
TORCH_BOUNDARY = "stoker._torch"


def _in_boundary(name: str) -> bool:
    return name == TORCH_BOUNDARY or name.startswith(TORCH_BOUNDARY + ".")


# The torch door imports torch by design; it is the one other place allowed to.
TORCH_DOORS = ("stoker.torch",)
# A string that names a torch module, as in sys.modules.get("torch") or "torch.utils.data".
_TORCH_MODULE_NAME = re.compile(r"torch(\.[A-Za-z_]\w*)*")
PUBLIC_PACKAGES = (
    "stoker.board",
    "stoker.cmp",
    "stoker.data",
    "stoker.tensorboard",
    "stoker.torch.data",
)


@dataclass(frozen=True)
class Module:
    """One module of src/: its dotted name, whether it is a package's ``__init__``, its AST."""

    name: str
    is_package: bool
    tree: ast.Module

    @property
    def package(self) -> str:
        """The package this module's relative imports and privacy are judged against."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


def _modules() -> dict[str, Module]:
    found: dict[str, Module] = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        name = ".".join(parts)
        found[name] = Module(name, is_package, ast.parse(path.read_text(), str(path)))
    return found


MODULES = _modules()


def _imports(module: Module) -> Iterator[tuple[ast.stmt, str, list[str]]]:
    """Yield ``(node, imported module, names taken from it)`` for every import in ``module``."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield node, base, [alias.name for alias in node.names]


def _targets(module: Module) -> Iterator[tuple[ast.stmt, str]]:
    """Yield each stoker module ``module`` imports, resolving ``from pkg import submodule``."""
    for node, base, names in _imports(module):
        if not base.startswith("stoker"):
            continue
        submodules = [f"{base}.{name}" for name in names if f"{base}.{name}" in MODULES]
        yield from ((node, target) for target in submodules)
        if len(submodules) < len(names) or not names:
            yield node, base


def _names_torch_module(node: ast.AST) -> bool:
    """A string constant that is a torch module's name: ``"torch"``, ``"torch.distributed"``."""
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and _TORCH_MODULE_NAME.fullmatch(node.value) is not None
    )


def _assigned(tree: ast.Module, name: ast.Name) -> bool:
    """Whether ``name`` is the target of a plain assignment (``torch = sys.modules[...]``)."""
    return any(
        isinstance(node, (ast.Assign, ast.NamedExpr, ast.For, ast.With))
        and any(target is name for target in ast.walk(node))
        for node in ast.walk(tree)
    )


def _where(module: Module, node: ast.AST) -> str:
    return f"{module.name}:{getattr(node, 'lineno', '?')}"


def test_every_module_parses_and_has_a_docstring_stating_its_concern() -> None:
    """Every module under src/ opens with a docstring (its first line says what it is for)."""
    missing = [name for name, module in MODULES.items() if not ast.get_docstring(module.tree)]
    assert not missing, f"modules without a docstring: {missing}"
    assert len(MODULES) > 50, "the scan found too few modules: is SRC right?"


def test_only_the_torch_boundary_names_torch() -> None:
    """Outside stoker._torch (and the torch door), no code imports or looks up torch.

    Docstrings, comments and messages may speak of torch; code may not: no ``import torch``, no
    lookup by a torch module's name (``sys.modules.get("torch")``, ``sys.modules["torch"]``,
    ``startswith("torch")``), no variable named ``torch``, no ``__import__`` of a computed name
    (``type(x).__module__``). A field or message that merely says "torch" is fine.
    """
    offences = []
    for module in MODULES.values():
        if _in_boundary(module.name) or module.name.startswith(TORCH_DOORS):
            continue
        for node, base, _ in _imports(module):
            if base == "torch" or base.startswith("torch."):
                offences.append(f"{_where(module, node)} imports {base}")
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Call):
                for argument in node.args:
                    if _names_torch_module(argument):
                        offences.append(f"{_where(module, node)} looks up a torch module by name")
            elif isinstance(node, ast.Subscript) and _names_torch_module(node.slice):
                offences.append(f"{_where(module, node)} indexes by a torch module's name")
            elif isinstance(node, ast.Name) and node.id == "torch":
                if isinstance(node.ctx, ast.Load) or _assigned(module.tree, node):
                    offences.append(f"{_where(module, node)} uses a variable named torch")
            elif isinstance(node, ast.Name) and node.id == "__import__":
                offences.append(f"{_where(module, node)} imports by computed name")
    assert not offences, "torch outside stoker._torch:\n" + "\n".join(offences)


def test_the_boundary_check_sees_a_violation() -> None:
    """The torch check is not vacuous: the lookups the boundary itself makes are recognised."""
    boundary = [module for name, module in MODULES.items() if _in_boundary(name)]
    assert len(boundary) > 1, "stoker._torch is a package of modules, one concern each"
    lookups = [
        node
        for module in boundary
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Call) and any(_names_torch_module(arg) for arg in node.args)
    ]
    assert lookups, "stoker._torch looks torch up by name; the check should see it"


def test_only_the_boundarys_facade_is_imported_from_outside_it() -> None:
    """Outside ``stoker._torch`` code imports the facade, never one of the package's modules."""
    offences = [
        f"{_where(module, node)} imports {target}"
        for module in MODULES.values()
        if not _in_boundary(module.name)
        for node, target in _targets(module)
        if target.startswith(TORCH_BOUNDARY + ".")
    ]
    assert not offences, "\n".join(offences)


def _graph() -> dict[str, set[str]]:
    return {
        name: {target for _, target in _targets(module) if target != name}
        for name, module in MODULES.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one member (or a self-loop)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_no_import_circle_in_src() -> None:
    """The import graph of src/ has no circle, counting imports in functions and TYPE_CHECKING."""
    cycles = _cycles(_graph())
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_circle_finder_finds_a_circle() -> None:
    """The circle check is not vacuous: a two-module circle is reported."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


# Private facades one part opens to another, each with its reason: (importer package, module).
CROSS_PART_FACADES = {
    # the torch door subclasses stoker.data's DataLoader and names its default samplers
    ("stoker.torch.data", "stoker.data._door"),
    # the board serves what the reader reads: runs read into TensorBoard's data model
    ("stoker.board", "stoker.tensorboard._board"),
}


def _private_root(target: str) -> str | None:
    """The package that owns ``target``'s first private part, or None when every part is public.

    The package that owns ``target``'s first private part (``stoker.data`` for
    ``stoker.data._workers.loop``), or None when every part is public.
    """
    parts = target.split(".")
    for position, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:position])
    return None


def test_no_module_reaches_into_another_packages_private_modules() -> None:
    """A private module is imported only from inside the package that owns it.

    ``stoker.cli`` uses ``stoker.tensorboard``'s public names, never
    ``stoker.tensorboard._read``; the shared ``stoker._torch`` belongs to ``stoker`` itself and
    is open to every part; the facades in ``CROSS_PART_FACADES`` are open to the one part named
    with each.
    """
    offences = []
    for module in MODULES.values():
        for node, target in _targets(module):
            owner = _private_root(target)
            inside = module.package == owner or module.package.startswith(f"{owner}.")
            opened = any(
                target == facade and (module.package + ".").startswith(importer + ".")
                for importer, facade in CROSS_PART_FACADES
            )
            if owner is not None and not inside and not opened:
                offences.append(f"{_where(module, node)} imports {target}")
    assert not offences, "\n".join(offences)


def test_no_private_name_is_imported_from_another_module() -> None:
    """``from x import _name`` appears nowhere: a private name crossing modules is a wrong cut.

    Private *modules* may be imported (``from stoker import _torch``) where the previous test
    allows it; private functions, classes and constants stay in the module that defines them.
    """
    offences = []
    for module in MODULES.values():
        for node, base, names in _imports(module):
            if not base.startswith("stoker"):
                continue
            for name in names:
                private = name.startswith("_") and not name.startswith("__")
                if private and f"{base}.{name}" not in MODULES:
                    offences.append(f"{_where(module, node)} imports {name} from {base}")
    assert not offences, "\n".join(offences)


def test_every_cross_part_facade_exists_and_is_used_by_its_part() -> None:
    """The allow-list names real private facades, each imported by the part it opens to."""
    for importer, facade in CROSS_PART_FACADES:
        assert facade in MODULES, f"{facade} does not exist"
        users = [
            name
            for name, module in MODULES.items()
            if (name + ".").startswith(importer + ".")
            and any(target == facade for _, target in _targets(module))
        ]
        assert users, f"{importer} does not import {facade}: drop it from the list"


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_public_objects_show_their_public_module(package: str) -> None:
    """Every class and function in ``__all__`` reports the package as its module.

    Every class and function in ``__all__`` reports the package as its module (for repr,
    tracebacks, help() and pickles), e.g. ``stoker.data.DataLoader``.
    """
    namespace = importlib.import_module(package)
    wrong = {}
    for name in namespace.__all__:
        obj = getattr(namespace, name)
        module = getattr(obj, "__module__", None)
        private = isinstance(module, str) and module.startswith(f"{package}.")
        if (isinstance(obj, type) or callable(obj)) and private:
            wrong[name] = module
    assert not wrong, f"public names still showing a private module: {wrong}"


def _entry_graph(package: str) -> dict[str, set[str]]:
    """The imports between ``package``'s entries: its modules and sub-packages, each one node."""
    depth = package.count(".") + 2

    def entry(name: str) -> str:
        return ".".join(name.split(".")[:depth])

    graph: dict[str, set[str]] = {}
    for name, targets in _graph().items():
        if name == package or not name.startswith(package + "."):
            continue
        inside = {entry(t) for t in targets if t.startswith(package + ".")}
        graph.setdefault(entry(name), set()).update(inside - {entry(name)})
    return graph


def _floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each node's floor: 1 for a node importing none of the others, else 1 + its highest."""
    floors: dict[str, int] = {}

    def floor(node: str) -> int:
        if node not in floors:
            floors[node] = 1 + max((floor(t) for t in graph.get(node, ())), default=0)
        return floors[node]

    for node in graph:
        floor(node)
    return floors


def test_stoker_data_is_about_twenty_entries_on_at_most_nine_floors() -> None:
    """``stoker.data``'s entries (modules and family packages) stack on at most nine floors.

    Each family (``_samplers/``, ``_resume/``, ``_containers/``, ``_workers/``) counts as one
    entry; no two entries import each other, even through their modules, and the package holds
    about twenty (DESIGN's families: a new module joins one before it adds an entry).
    """
    graph = _entry_graph("stoker.data")
    assert _cycles(graph) == []
    floors = _floors(graph)
    assert max(floors.values()) <= 9, sorted(floors.items(), key=lambda item: item[1])
    assert len(graph) <= 24, sorted(graph)
