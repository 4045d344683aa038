"""Batches and the searcher's units convert both ways in one place (``Length``)."""

import pytest

from determined.config import Length, Unit, global_batch_size


@pytest.mark.parametrize("unit", list(Unit))
def test_from_batches_is_the_way_back_from_to_batches(unit: Unit) -> None:
    gbs, per_epoch = 32, 320
    length = Length.from_batches(unit, 50, gbs, per_epoch)
    assert length.unit is unit
    assert length.to_batches(gbs, per_epoch) == 50
    assert length.units == {Unit.BATCHES: 50, Unit.RECORDS: 1600, Unit.EPOCHS: 5}[unit]


def test_epochs_count_zero_without_records_per_epoch() -> None:
    assert Length.from_batches(Unit.EPOCHS, 50, 32).units == 0


def test_global_batch_size_of_hyperparameters() -> None:
    assert global_batch_size({"global_batch_size": 16, "lr": 0.1}) == 16
    assert global_batch_size({"lr": 0.1}) is None  # a script trial has none
    assert global_batch_size({"global_batch_size": True}) is None
    assert global_batch_size(None) is None
