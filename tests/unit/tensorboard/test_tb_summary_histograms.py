"""Histogram bins: TensorFlow's default edges, and the sort-free count that equals NumPy's."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from stoker.tensorboard._summary import histograms as _histogram


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
