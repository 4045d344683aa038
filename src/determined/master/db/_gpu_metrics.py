"""GPU metrics of trials: readings of the GPUs each trial ran on, as its agent sent them."""

import datetime
from typing import Any, Dict, List, Sequence

import sqlalchemy as sa

from determined.master.db import _models as m
from determined.master.db._base import StoreBase
from determined.master.db._checks import check_int

__all__ = ["GpuMetricsMixin"]

#: Keys of a reading (``determined._procs._gpu_metrics``): time (seconds since the epoch),
#: gpu_index, gpu_uuid, utilization (percent), memory_used and memory_total (bytes).
_KEYS = ("time", "gpu_index", "gpu_uuid", "utilization", "memory_used", "memory_total")


def _row(trial_id: int, sample: Dict[str, Any]) -> Dict[str, Any]:
    missing = [k for k in _KEYS if k not in sample]
    if missing:
        raise ValueError(f"Expected a GPU sample with keys {', '.join(_KEYS)}. "
                         f"Received: {sample!r} (missing {', '.join(missing)})")
    return {"trial_id": trial_id,
            "time": datetime.datetime.fromtimestamp(float(sample["time"]),
                                                    datetime.timezone.utc),
            "gpu_index": int(sample["gpu_index"]), "gpu_uuid": str(sample["gpu_uuid"]),
            "utilization": float(sample["utilization"]),
            "memory_used": int(sample["memory_used"]),
            "memory_total": int(sample["memory_total"])}


class GpuMetricsMixin(StoreBase):
    def add_gpu_samples(self, trial_id: int, samples: Sequence[Dict[str, Any]]) -> int:
        """Store readings of the trial's GPUs; how many. Raises ValueError for a
        malformed reading (nothing is stored then)."""
        check_int("trial_id", trial_id, minimum=1)
        rows = [_row(trial_id, s) for s in samples]
        if rows:
            with self._write() as s:
                s.execute(sa.insert(m.GpuSample.__table__), rows)
        return len(rows)

    def gpu_samples(self, trial_id: int, limit: int = 20000) -> List[Dict[str, Any]]:
        """The trial's newest ``limit`` readings, oldest first (``time`` an aware UTC
        datetime); [] for a trial without any."""
        check_int("limit", limit, minimum=0)
        t = m.GpuSample.__table__
        query = (sa.select(t.c.time, t.c.gpu_index, t.c.gpu_uuid, t.c.utilization,
                           t.c.memory_used, t.c.memory_total)
                 .where(t.c.trial_id == trial_id).order_by(t.c.time.desc(), t.c.id.desc())
                 .limit(limit))
        with self._read() as s:
            rows = [dict(row._mapping) for row in s.execute(query)]
        return rows[::-1]
