"""Checkpoint downloads through the master, for clients that cannot read the storage.

- ``GET /api/v1/checkpoints/{uuid}/download`` -> ``application/x-tar``: every file of
  the checkpoint (paths relative to its directory), streamed. Any logged-in user
  (as for reading checkpoints). 404 for an unknown, deleted or missing checkpoint;
  502 when the storage cannot be reached.

Object-store checkpoints are fetched to a scratch directory on the master first
(in parallel, streamed to disk), then streamed out and removed.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import fastapi
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from determined.errors import CheckpointError, StorageError
from determined.master._core import Master
from determined.storage import build_storage
from determined.storage._archive import tar_stream

__all__ = ["checkpoint_download_router"]


def checkpoint_download_router(master: Master) -> fastapi.APIRouter:
    api = fastapi.APIRouter(prefix="/api/v1", tags=["checkpoints"])

    def _open(uuid: str) -> "tuple[contextlib.ExitStack, str]":
        ckpt = master.store.get_checkpoint(uuid)  # NotFoundError -> 404
        if ckpt.state != "COMPLETED":
            raise fastapi.HTTPException(
                404, f"checkpoint {uuid} is {ckpt.state}; only COMPLETED ones have files")
        section = master.store.get_experiment(ckpt.experiment_id).config.get("checkpoint_storage")
        stack = contextlib.ExitStack()
        try:
            storage = build_storage(section or master.config.checkpoint_storage or {})
            path = stack.enter_context(storage.restore_path(uuid))
        except CheckpointError as e:
            stack.close()
            message = str(e) if uuid in str(e) else f"checkpoint {uuid}: {e}"
            raise fastapi.HTTPException(404, f"{message} (it is recorded as COMPLETED: were "
                                             "its files removed outside Determined?)") from None
        except StorageError as e:
            stack.close()
            raise fastapi.HTTPException(502, f"checkpoint storage of {uuid}: {e}") from None
        return stack, path

    @api.get("/checkpoints/{uuid}/download", response_class=StreamingResponse,
             responses={200: {"content": {"application/x-tar": {}}}})
    async def download_checkpoint(uuid: str) -> StreamingResponse:
        stack, path = await run_in_threadpool(_open, uuid)

        def body() -> Iterator[bytes]:
            with stack:
                yield from tar_stream(path)

        # The background task cleans up when the client went away before the body ran.
        return StreamingResponse(body(), media_type="application/x-tar", headers={
            "Content-Disposition": f'attachment; filename="{uuid}.tar"'},
            background=BackgroundTask(stack.close))

    return api
