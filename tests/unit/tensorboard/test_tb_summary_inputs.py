"""The one as_numpy: what it accepts, and what it rejects with which message."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from stoker.tensorboard._summary.inputs import as_numpy, check_tag, scalar_to_float


def test_arrays_lists_and_numbers_become_arrays() -> None:
    """A NumPy array comes back as itself; nested lists and numbers become arrays."""
    array = np.arange(6.0).reshape(2, 3)
    assert as_numpy(array, "x") is array
    assert as_numpy([[1, 2], [3, 4]], "x").tolist() == [[1, 2], [3, 4]]
    assert as_numpy(2.5, "x").shape == ()


def test_torch_tensors_are_detached_and_widened() -> None:
    """A tensor needing grad converts; bfloat16 becomes float32 with the same values."""
    torch = pytest.importorskip("torch")
    tensor = torch.tensor([1.5, -2.0], requires_grad=True)
    np.testing.assert_array_equal(as_numpy(tensor, "x"), [1.5, -2.0])
    half = as_numpy(tensor.detach().to(torch.bfloat16), "x")
    assert half.dtype == np.float32
    np.testing.assert_array_equal(half, [1.5, -2.0])


def test_any_dtype_lets_the_caller_check_strings() -> None:
    """Strings are refused unless any_dtype=True, for builders that check dtypes themselves."""
    with pytest.raises(TypeError, match="x must hold booleans, integers or floats, got dtype <U1"):
        as_numpy(["a", "b"], "x")
    assert as_numpy(np.array(["a", "b"]), "x", any_dtype=True).dtype.kind == "U"


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: as_numpy("cat.png", "img"), TypeError, "img must be a number, a NumPy array"),
        (lambda: as_numpy(None, "img"), TypeError, "img must be a number"),
        (lambda: as_numpy([[1, 2], [3]], "img"), TypeError, "img must be a rectangular array"),
        (lambda: as_numpy([object()], "img"), TypeError, "img must be numeric"),
        (lambda: as_numpy(np.zeros(2, complex), "img"), TypeError, "got dtype complex128"),
        (lambda: check_tag(3), TypeError, "tag must be a str, got 3"),
        (lambda: check_tag(""), ValueError, "tag must be a non-empty str"),
        (lambda: scalar_to_float("1.0"), TypeError, "scalar_value must be a number"),
        (lambda: scalar_to_float(np.ones(2)), ValueError, "must hold exactly one element"),
        (lambda: scalar_to_float(np.array([1j])), TypeError, "must be a real number"),
    ],
)
def test_bad_input_raises_clear_errors(call: Any, error: type[Exception], match: str) -> None:
    """Each invalid argument raises the documented exception naming the parameter."""
    with pytest.raises(error, match=match):
        call()


def test_meta_tensors_are_refused() -> None:
    """A tensor on the meta device holds no data: ValueError naming the argument."""
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="x must hold data, got a tensor on the meta device"):
        as_numpy(torch.zeros(2, device="meta"), "x")
