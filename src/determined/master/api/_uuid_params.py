"""Checkpoint ids in paths: ``/checkpoints/{uuid}...`` with a malformed id is a 400
naming it and the expected form (an unknown well-formed one stays a 404).

:func:`checkpoint_uuid_params` runs before every route (an application dependency),
as :func:`~determined.master.api._bounds.int64_params` does for integers.
"""

from __future__ import annotations

import fastapi
from fastapi import Request

from determined.engine import check_checkpoint_id

__all__ = ["checkpoint_uuid_params"]


async def checkpoint_uuid_params(request: Request) -> None:
    """400 for a ``uuid`` path parameter that is not a checkpoint id."""
    uuid = request.path_params.get("uuid")
    if uuid is None:
        return
    try:
        check_checkpoint_id(uuid)
    except ValueError as e:  # EngineError
        raise fastapi.HTTPException(status_code=400, detail=f"uuid: {e}") from None
