"""``GET /api/v1/trials/{id}/gpu-metrics``: the readings of the GPUs a trial ran on.

Answer: ``{"gpu_metrics": [{time, gpu_index, gpu_uuid, utilization, memory_used,
memory_total}]}``, oldest first (``time`` ISO 8601 UTC, utilization in percent, memory
in bytes); ``[]`` for a trial that ran on no GPU, 404 for an unknown trial. Agents take
a reading every ``gpu_metrics_interval`` seconds while the trial runs.
"""

from __future__ import annotations

from typing import Any, Dict

import fastapi
from fastapi import Query

from determined.master._core import Master
from determined.master.views import iso

__all__ = ["gpu_metrics_router"]


def gpu_metrics_router(master: Master) -> fastapi.APIRouter:
    api = fastapi.APIRouter(prefix="/api/v1", tags=["trials"])

    @api.get("/trials/{id}/gpu-metrics")
    def trial_gpu_metrics(id: int, limit: int = Query(20000, ge=1, le=200000,
                                                      description="the newest this many")
                          ) -> Dict[str, Any]:
        master.store.get_trial(id)  # 404 for an unknown trial
        rows = master.store.gpu_samples(id, limit=limit)
        return {"gpu_metrics": [dict(row, time=iso(row["time"])) for row in rows]}

    return api
