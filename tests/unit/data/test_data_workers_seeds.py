"""The words that seed NumPy's legacy global state in a worker: NumPy's SeedSequence's."""

from __future__ import annotations

import numpy as np
import pytest

from stoker.data._workers.info import numpy_seed_words

_EDGES = [0, 1, 2**31, 2**32 - 1, 2**32, 2**63, 2**64 - 1]


@pytest.mark.parametrize("worker_id", [0, 1, 2, 31, 255, 2**31])
def test_the_words_are_those_of_numpy_seed_sequence(worker_id: int) -> None:
    seeds = [*_EDGES, *np.random.default_rng(worker_id).integers(0, 2**63, 200).tolist()]
    for base_seed in seeds:
        entropy = [worker_id, base_seed & 0xFFFFFFFF, (base_seed >> 32) & 0xFFFFFFFF, 0]
        expected = np.random.SeedSequence(entropy).generate_state(4, np.uint32).tolist()
        assert numpy_seed_words(base_seed, worker_id) == expected, (base_seed, worker_id)


def test_the_words_seed_numpy_as_the_array_of_them_does() -> None:
    words = numpy_seed_words(12345, 3)
    assert all(0 <= word < 2**32 for word in words)
    state = np.random.RandomState(words).get_state(legacy=True)[1]
    from_array = np.random.RandomState(np.array(words, dtype=np.uint32)).get_state(legacy=True)[1]
    np.testing.assert_array_equal(state, from_array)
