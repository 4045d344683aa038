"""Upstream 0.13's Keras data helpers."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from determined import keras  # noqa: E402


def test_array_like_adapter_batches_and_leftovers():
    x, y = np.arange(10).reshape(10, 1), np.arange(10)
    full = keras._ArrayLikeAdapter(x, y, batch_size=4)
    assert len(full) == 3 and full[2][0].shape == (2, 1)
    dropped = keras._ArrayLikeAdapter(x, y, batch_size=4, drop_leftovers=True)
    assert len(dropped) == 2
    with pytest.raises(IndexError):
        dropped[2]
    weighted = keras._ArrayLikeAdapter({"in": x}, y, 5, sample_weights=np.ones(10))
    assert len(weighted[1]) == 3 and list(weighted[1][0]) == ["in"]
    with pytest.raises(ValueError, match="different numbers of records"):
        keras._ArrayLikeAdapter(x, y[:5], 2)


def test_adapt_keras_data_and_sequence_adapter_iteration():
    x, y = np.arange(10), np.arange(10) * 2
    adapter = keras._adapt_keras_data(x, y, batch_size=4, workers=0)
    assert isinstance(adapter, keras.SequenceAdapter)
    adapter.start(batch_offset=2)
    it = adapter.get_iterator()
    assert [next(it)[1].tolist() for _ in range(3)] == [[16, 18], [0, 2, 4, 6], [8, 10, 12, 14]]
    adapter.stop()
    adapter.start(is_validation=True)
    assert len(list(adapter.get_iterator())) == 3
    adapter.stop()
    ds = tf.data.Dataset.range(3)
    assert keras._adapt_keras_data(ds) is ds
    assert keras._get_x_y_and_sample_weight((x, y)) == (x, y, None)


def test_sequence_with_offset_wraps_around():
    seq = keras._ArrayLikeAdapter(np.arange(6), np.arange(6), 2)
    shifted = keras._SequenceWithOffset(seq, batch_offset=2)
    assert len(shifted) == 3
    assert shifted[0][0].tolist() == [4, 5] and shifted[1][0].tolist() == [0, 1]
