"""The public surface of stoker.tensorboard: names, signatures, public paths, the torch boundary."""

from __future__ import annotations

import ast
import inspect
import pickle
from pathlib import Path

import pytest

import stoker.tensorboard as stb


def test_all_is_sorted_and_every_name_imports() -> None:
    """__all__ is sorted and each listed name is an attribute of the package."""
    assert stb.__all__ == sorted(stb.__all__)
    for name in stb.__all__:
        assert getattr(stb, name) is not None


@pytest.mark.parametrize("cls_name", ["SummaryWriter", "FileWriter"])
def test_signatures_match_torch(cls_name: str) -> None:
    """Every public method of torch's class exists with the same parameters and defaults."""
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    theirs = getattr(torch_tb, cls_name)
    mine = getattr(stb, cls_name)
    names = [
        n
        for n in vars(theirs)
        if not n.startswith("_") or n in ("__init__", "__enter__", "__exit__")
    ]
    names = [n for n in names if callable(getattr(theirs, n))]
    assert names
    for name in names:
        assert hasattr(mine, name), name
        expected = [
            (p.name, p.default, p.kind)
            for p in inspect.signature(getattr(theirs, name)).parameters.values()
        ]
        actual = [
            (p.name, p.default, p.kind)
            for p in inspect.signature(getattr(mine, name)).parameters.values()
            if p.kind is not inspect.Parameter.KEYWORD_ONLY
        ]
        assert actual == expected, name


def test_public_names_show_their_public_module() -> None:
    """Public classes (and their methods) and functions read as stoker.tensorboard names."""
    for name in stb.__all__:
        assert getattr(stb, name).__module__ == "stoker.tensorboard", name
    assert repr(stb.SummaryWriter) == "<class 'stoker.tensorboard.SummaryWriter'>"
    assert stb.Reader.scalars.__module__ == "stoker.tensorboard"
    assert stb.Reader.scalars.__qualname__ == "Reader.scalars"


def test_public_classes_and_errors_pickle_by_their_public_path() -> None:
    """A class, an error and a value pickle as stoker.tensorboard.<name> and load back equal."""
    assert pickle.loads(pickle.dumps(stb.SummaryWriter)) is stb.SummaryWriter
    data = pickle.dumps(stb.EventFileError("tag must be a scalars tag"))
    assert b"stoker.tensorboard" in data
    assert b"stoker.tensorboard._" not in data
    error = pickle.loads(data)
    assert type(error) is stb.EventFileError
    assert error.args == ("tag must be a scalars tag",)
    position = stb.FilePosition("events.out.tfevents.1", 42, True)
    assert pickle.loads(pickle.dumps(position)) == position
    warning = pickle.loads(pickle.dumps(stb.CorruptRecordWarning("offset 3")))
    assert isinstance(warning, stb.CorruptRecordWarning)


def _code_mentions_of_torch(tree: ast.AST) -> list[str]:
    """Imports of torch, "torch..." string constants and sys.modules look-ups in a module's code."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "torch"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
            found.append(f"from {node.module}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value == "torch" or node.value.startswith("torch."):
                found.append(repr(node.value))
        elif isinstance(node, ast.Attribute) and node.attr == "modules":
            if isinstance(node.value, ast.Name) and node.value.id == "sys":
                found.append("sys.modules")
        elif isinstance(node, ast.Name) and node.id == "__import__":
            found.append("__import__")
    return found


def test_only_the_torch_boundary_looks_at_torch() -> None:
    """No module of stoker.tensorboard imports torch or detects it: stoker._torch does that.

    (The exit hooks read sys.modules for multiprocessing, not torch, and are listed apart.)
    """
    root = Path(stb.__file__).parent
    found = {
        str(path.relative_to(root)): mentions
        for path in sorted(root.rglob("*.py"))
        if (mentions := _code_mentions_of_torch(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert found == {"_process_hooks.py": ["sys.modules"]}
    source = (root / "_process_hooks.py").read_text(encoding="utf-8")
    assert 'sys.modules.get("multiprocessing.util")' in source
