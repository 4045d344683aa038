"""Training lengths: ``{records: N}``, ``{batches: N}`` or ``{epochs: N}``.

A :class:`Length` is a unit and a count. Searchers compute with lengths in the
unit the config used; the trial runner converts them to batches with
:meth:`Length.to_batches`, which needs ``global_batch_size`` and, for epochs,
``records_per_epoch``.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Dict, Mapping, Optional

__all__ = ["Unit", "Length", "global_batch_size"]


class Unit(str, enum.Enum):
    """The unit a training length is measured in."""

    RECORDS = "records"
    BATCHES = "batches"
    EPOCHS = "epochs"


@dataclasses.dataclass(frozen=True, order=True)
class Length:
    """A training length: ``units`` of ``unit``.

    Example:
        >>> Length.from_dict({"batches": 100}).to_batches(global_batch_size=32)
        100
        >>> Length(Unit.EPOCHS, 2).to_batches(global_batch_size=10, records_per_epoch=95)
        19
    """

    unit: Unit
    units: int

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> "Length":
        """Parse ``{"records"|"batches"|"epochs": N}``."""
        if not isinstance(value, Mapping) or len(value) != 1:
            raise ValueError(
                "Expected a length with exactly one key of records, batches or epochs. "
                f"Received: {value!r}"
            )
        (key, count), = value.items()
        try:
            unit = Unit(key)
        except ValueError:
            raise ValueError(
                f"Expected the unit to be records, batches or epochs. Received: {key!r}"
            ) from None
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"Expected a non-negative integer {key}. Received: {count!r}")
        return cls(unit, count)

    def to_dict(self) -> Dict[str, int]:
        return {self.unit.value: self.units}

    def with_units(self, units: int) -> "Length":
        """The same unit with another count."""
        return Length(self.unit, units)

    def to_batches(self, global_batch_size: int, records_per_epoch: int = 0) -> int:
        """Convert to a number of batches (SPEC 1.2: records // gbs; epochs via records)."""
        if self.unit is Unit.BATCHES:
            return self.units
        if self.unit is Unit.RECORDS:
            return self.units // global_batch_size
        if records_per_epoch <= 0:
            raise ValueError(
                "A length in epochs needs records_per_epoch > 0 in the experiment config. "
                f"Received: records_per_epoch={records_per_epoch}"
            )
        return self.units * records_per_epoch // global_batch_size

    @classmethod
    def from_batches(cls, unit: Unit, batches: int, global_batch_size: int,
                     records_per_epoch: int = 0) -> "Length":
        """``batches`` of ``global_batch_size`` records as a length in ``unit`` (the way
        back from :meth:`to_batches`; without ``records_per_epoch`` epochs count 0).

        Example:
            >>> Length.from_batches(Unit.RECORDS, 10, global_batch_size=32).units
            320
            >>> Length.from_batches(Unit.EPOCHS, 10, 32, records_per_epoch=100).units
            3
        """
        if unit is Unit.BATCHES:
            return cls(unit, batches)
        if unit is Unit.RECORDS:
            return cls(unit, batches * global_batch_size)
        epochs = batches * global_batch_size // records_per_epoch if records_per_epoch > 0 else 0
        return cls(unit, epochs)

    @staticmethod
    def fraction_from_batches(unit: Unit, batches: int, global_batch_size: int,
                              records_per_epoch: int = 0) -> float:
        """Like :meth:`from_batches`, but keeps the fraction of an unfinished epoch (for
        progress: 186 batches of 32 are 3.97 epochs of 1500 records, not 3).

        Example:
            >>> Length.fraction_from_batches(Unit.EPOCHS, 10, 32, records_per_epoch=100)
            3.2
        """
        if unit is not Unit.EPOCHS:
            return float(Length.from_batches(unit, batches, global_batch_size).units)
        return batches * global_batch_size / records_per_epoch if records_per_epoch > 0 else 0.0

    def __str__(self) -> str:
        return f"{self.units} {self.unit.value}"


def global_batch_size(hparams: Any) -> Optional[int]:
    """The ``global_batch_size`` of a trial's hyperparameters (its records per batch),
    or None when it has none (a script trial) or it is not a number."""
    gbs = hparams.get("global_batch_size") if isinstance(hparams, Mapping) else None
    if isinstance(gbs, bool) or not isinstance(gbs, (int, float)):
        return None
    return int(gbs)
