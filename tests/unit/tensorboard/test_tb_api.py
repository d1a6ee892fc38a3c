"""The public surface of stoker.tensorboard: names, signatures, and what importing it loads."""

from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import stoker.tensorboard as stb
from stoker.tensorboard import _histogram


def test_all_is_sorted_and_every_name_imports() -> None:
    """__all__ is sorted and each listed name is an attribute of the package."""
    assert stb.__all__ == sorted(stb.__all__)
    for name in stb.__all__:
        assert getattr(stb, name) is not None


def test_import_loads_no_torch_tensorflow_tensorboard_or_protobuf() -> None:
    """Importing stoker.tensorboard and writing an event pulls in none of the heavy packages."""
    code = (
        "import sys, tempfile\n"
        "import stoker.tensorboard as t\n"
        "w = t.SummaryWriter(tempfile.mkdtemp()); w.add_scalar('x', 1.0, 1); w.close()\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'tensorflow', 'tensorboard', 'google')]\n"
        "print(bad)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


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


@settings(max_examples=150, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        st.integers(1, 300),
        elements=st.one_of(
            st.floats(-1e25, 1e25, allow_nan=False),
            st.sampled_from([0.0, -0.0, 1e-12, -1e-12, 1e20, -1e20, 5e-13, 1e-300]),
            st.sampled_from(_histogram.default_bins().tolist()),
            st.sampled_from(np.nextafter(_histogram.default_bins(), np.inf).tolist()),
            st.sampled_from(np.nextafter(_histogram.default_bins(), -np.inf).tolist()),
        ),
    )
)
def test_default_bins_count_like_numpy(values: np.ndarray) -> None:
    """The sort-free counting of TensorFlow-style default bins equals np.histogram's counts."""
    edges = _histogram.default_bins()
    expected, _ = np.histogram(values, bins=edges)
    assert _histogram._default_bin_counts(values).tolist() == expected.tolist()
    assert _histogram._counts_for_sorted_edges(values, edges).tolist() == expected.tolist()


def test_default_bins_are_tensorflows() -> None:
    """Default edges: 0 in the middle, +-1e-12 growing by 1.1 while below 1e20, symmetric."""
    edges = _histogram.default_bins()
    middle = len(edges) // 2
    assert edges[middle] == 0.0
    assert edges[middle + 1] == 1e-12
    assert np.allclose(edges[middle + 2 :] / edges[middle + 1 : -1], 1.1)
    assert edges[-1] < 1e20 <= edges[-1] * 1.1
    assert np.array_equal(edges[:middle], -edges[middle + 1 :][::-1])


def test_default_bins_count_like_numpy_across_chunks() -> None:
    """Large inputs, processed in chunks, still count exactly like np.histogram, edges included."""
    edges = _histogram.default_bins()
    rng = np.random.default_rng(3)
    values = np.concatenate(
        [
            edges,
            np.nextafter(edges, np.inf),
            np.nextafter(edges, -np.inf),
            rng.normal(size=20_000) * 10.0 ** rng.integers(-14, 22, 20_000),
            [0.0, -0.0, 1e21, -1e21, 1e-300],
        ]
    )
    rng.shuffle(values)
    expected, _ = np.histogram(values, bins=edges)
    assert _histogram._default_bin_counts(values).tolist() == expected.tolist()
