"""The public API: every exported name imports, ``__all__`` is sorted, imports stay lazy."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = [
    "stoker",
    "stoker.board",
    "stoker.cmp",
    "stoker.data",
    "stoker.morestrings",
    "stoker.tensorboard",
    "stoker.torch.data",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_names_import(name: str) -> None:
    """Every name listed in a package's __all__ is an attribute of that package."""
    module = importlib.import_module(name)
    exported = module.__all__
    assert exported, f"{name}.__all__ is empty"
    missing = [attr for attr in exported if not hasattr(module, attr)]
    assert missing == []


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_unique(name: str) -> None:
    """Each __all__ is sorted and lists every name once."""
    exported = list(importlib.import_module(name).__all__)
    assert exported == sorted(exported)
    assert len(exported) == len(set(exported))


@pytest.mark.parametrize("name", PACKAGES)
def test_public_names_have_docstrings(name: str) -> None:
    """Every exported class and function stoker defines carries a docstring.

    Every exported class and function stoker defines carries a docstring (names a package
    re-exports from torch keep torch's).
    """
    module = importlib.import_module(name)
    undocumented = [
        attr
        for attr in module.__all__
        if callable(getattr(module, attr))
        and getattr(getattr(module, attr), "__module__", "").startswith("stoker")
        and not (getattr(module, attr).__doc__ or "").strip()
    ]
    assert undocumented == []


def _modules_after(code: str) -> set[str]:
    """Run ``code`` in a fresh interpreter and return the names in sys.modules afterwards."""
    script = f"{code}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return set(out.split())


def test_import_stoker_torch_imports_nothing_but_its_data_door_imports_torch() -> None:
    """`import stoker.torch` loads no torch; importing `stoker.torch.data` imports torch.

    `import stoker.torch` loads no torch (the package only names its doors); importing
    `stoker.torch.data` imports torch, as any torch program has.
    """
    assert "torch" not in _modules_after("import stoker.torch")
    assert "torch" in _modules_after("import stoker.torch.data")


def test_import_stoker_imports_no_subpackage() -> None:
    """`import stoker` loads none of stoker's subpackages."""
    loaded = _modules_after("import stoker")
    assert sorted(m for m in loaded if m.startswith("stoker.")) == []


@pytest.mark.parametrize("name", ["stoker.data", "stoker.tensorboard", "stoker.cmp"])
def test_import_is_framework_free(name: str) -> None:
    """Importing a stoker package never imports torch, TensorFlow, tensorboard or protobuf."""
    loaded = _modules_after(f"import {name}")
    assert name in loaded
    heavy = {"torch", "tensorflow", "tensorboard", "google.protobuf", "tensorboardX"}
    assert sorted(loaded & heavy) == []
