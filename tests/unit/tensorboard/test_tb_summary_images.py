"""Image summaries: the PNG and the size fields of Summary.Image equal torch's add_image."""

from __future__ import annotations

import pytest
from tb_images import IMAGE_CASES, assert_same_image, sample_pixels

from stoker.tensorboard._summary.images import image_summary_payload

tb_summary = pytest.importorskip("torch.utils.tensorboard.summary")


@pytest.mark.parametrize(("shape", "dataformats", "dtype"), IMAGE_CASES)
def test_payload_matches_torch_image_summary(
    shape: tuple[int, ...], dataformats: str, dtype: str
) -> None:
    """The PNG decodes to torch's pixels and the size fields equal torch's Summary.Image."""
    array = sample_pixels(shape, dtype)
    expected = tb_summary.image("t", array, dataformats=dataformats).value[0].image
    payload = image_summary_payload(array, dataformats)
    assert_same_image(payload, expected)
