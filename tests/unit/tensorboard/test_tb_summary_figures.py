"""Figures render to torch's pixels, close when asked, and fail clearly without matplotlib."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from stoker.tensorboard._summary.figures import figure_to_hwc

tb_utils = pytest.importorskip("torch.utils.tensorboard._utils")


def test_figure_to_hwc_matches_torch() -> None:
    """A figure and a list of figures render to torch's pixels, transposed to HWC."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    figures = []
    for index in range(2):
        fig = Figure(figsize=(2, 1.5), dpi=50)
        fig.add_subplot().plot([0, 1, 2], [index, 2, 1])
        figures.append(fig)
    expected_one = tb_utils.figure_to_image(figures[0], close=False).transpose(1, 2, 0)
    np.testing.assert_array_equal(figure_to_hwc(figures[0], close=False), expected_one)
    expected_list = tb_utils.figure_to_image(figures, close=False).transpose(0, 2, 3, 1)
    result = figure_to_hwc(figures, close=False)
    assert result.shape == (2, 75, 100, 3)
    np.testing.assert_array_equal(result, expected_list)


def test_figure_to_hwc_closes_pyplot_figures() -> None:
    """close=True closes a pyplot figure after rendering; close=False keeps it open."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kept, closed = plt.figure(figsize=(1, 1)), plt.figure(figsize=(1, 1))
    figure_to_hwc(kept, close=False)
    figure_to_hwc(closed)
    assert plt.fignum_exists(kept.number)
    assert not plt.fignum_exists(closed.number)
    plt.close(kept)


def test_figure_to_hwc_without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing matplotlib raises ImportError that says how to install it."""
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        figure_to_hwc(object())


def test_figure_errors() -> None:
    """figure_to_hwc rejects non-figures, empty lists and figures of different sizes."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    with pytest.raises(TypeError, match="Figure"):
        figure_to_hwc(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="non-empty"):
        figure_to_hwc([])
    with pytest.raises(ValueError, match="one size"):
        figure_to_hwc([Figure(figsize=(1, 1)), Figure(figsize=(2, 1))], close=False)
