"""`stoker logs plot`'s smoothing: TensorBoard's debiased moving average, its weight checked."""

from __future__ import annotations

import numpy as np
import pytest

from stoker.cli._plot import smooth


def test_smooth_is_tensorboards_debiased_moving_average() -> None:
    """The first point is unchanged, later ones follow last*w + (1-w)*x over 1 - w**n."""
    values = np.array([1.0, 3.0, float("nan"), 2.0])
    out = smooth(values, 0.6)
    expected = []
    last, n = 0.0, 0
    for x in (1.0, 3.0, 2.0):
        last, n = last * 0.6 + 0.4 * x, n + 1
        expected.append(last / (1 - 0.6**n))
    np.testing.assert_allclose(out[[0, 1, 3]], expected)
    assert out[0] == 1.0
    assert np.isnan(out[2])
    np.testing.assert_array_equal(smooth(values, 0.0), values)
    np.testing.assert_array_equal(smooth([4.0, 4.0], 0.9), [4.0, 4.0])


@pytest.mark.parametrize("weight", [-0.1, 1.0, True])
def test_smooth_rejects_a_weight_outside_0_1(weight: object) -> None:
    """The weight must be in [0, 1)."""
    with pytest.raises(ValueError, match="smoothing must be"):
        smooth([1.0], weight)  # type: ignore[arg-type]
