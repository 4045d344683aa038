"""The trial runners' routes: ``/api/v1/trial-runner/...``, authenticated by the trial's
token (``Authorization: Bearer <trial token>``), not by a user.

- ``GET next-op`` -> ``{"op": op or null}`` (a long poll of up to 25 s);
- ``POST training`` / ``training-batch`` / ``validation`` / ``checkpoint`` /
  ``validate-op-completed`` / ``early-exit`` / ``progress`` / ``script-exited`` (script
  trials) -> ``{"stop": bool}`` (``validation`` may also end the Validate op and carry
  the next ``op``); ``GET should-stop`` -> ``{"stop": bool}``;
- ``GET checkpoints`` -> ``{"uuids": [...]}``; ``GET is-best?value=`` -> ``{"best"}``;
  ``GET best-validation`` -> ``{"value": number or null}``;
  ``POST logs`` -> ``{"stored": n}``.

A report that does not fit the trial's state is a 409 (``_app.py``). Each route hands
its report to the master's :class:`~determined.master.experiments.Experiments`; a new
route does the same through :data:`Runner` (the caller's live trial).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Dict, Optional, Set

import fastapi
from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from determined.master._core import Master
from determined.master.api import _models as models
from determined.master.api._errors import APIError
from determined.master.api._json_body import json_body, json_body_doc
from determined.master.experiments import LiveTrial

__all__ = ["LONG_POLL_SECONDS", "PREFIX", "trial_runner_router"]

PREFIX = "/api/v1/trial-runner"
LONG_POLL_SECONDS = 25.0


class _Wakeups:
    """Async waiters woken by ``Master.cond.notify_all(scope)`` from any thread.

    Each waiter is armed with the experiment it waits for; a notification scoped to one
    experiment wakes only its waiters, an unscoped one wakes all.
    """

    def __init__(self) -> None:
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._futures: Dict[Optional[int], Set["asyncio.Future[None]"]] = {}

    def arm(self, scope: Optional[int] = None) -> "asyncio.Future[None]":
        self._loop = asyncio.get_running_loop()
        future = self._loop.create_future()
        self._futures.setdefault(scope, set()).add(future)
        return future

    def disarm(self, future: "asyncio.Future[None]") -> None:
        for scope, waiting in list(self._futures.items()):
            waiting.discard(future)
            if not waiting:
                del self._futures[scope]

    async def wait(self, future: "asyncio.Future[None]", timeout: float) -> None:
        try:
            await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            pass
        finally:
            self.disarm(future)

    def notify(self, scope: Optional[int] = None) -> None:
        loop = self._loop
        if loop is not None and self._futures:
            try:
                loop.call_soon_threadsafe(self._release, scope)
            except RuntimeError:  # the loop has closed: the master is stopping
                pass

    def _release(self, scope: Optional[int]) -> None:
        if scope is None:
            released, self._futures = self._futures, {}
        else:
            released = {scope: self._futures.pop(scope, set())}
            released[None] = self._futures.pop(None, set())  # unscoped waiters: any change
        for futures in released.values():
            for future in futures:
                if not future.done():
                    future.set_result(None)


def trial_runner_router(master: Master) -> fastapi.APIRouter:
    """The trial runners' routes. The app includes them before every other route
    (FastAPI tries routes in order, at some cost each: the runners' reports are the
    master's most frequent requests)."""
    router = fastapi.APIRouter(prefix=PREFIX)
    experiments = master.experiments

    async def runner(request: Request) -> LiveTrial:
        # Async (no thread hop per report): the token check is a cached lookup. The
        # header is read directly: a Header() parameter costs a validation per request.
        authorization = request.headers.get("authorization")
        if not authorization or not authorization.startswith("Bearer "):
            raise APIError(401, "Trial-runner calls need 'Authorization: Bearer <trial token>'")
        found = experiments.runner_for_token(authorization[len("Bearer "):].strip())
        if found is None:
            raise APIError(401, "Unknown or expired trial token")
        return found

    Runner = Depends(runner)
    wakeups = _Wakeups()
    master.cond.listeners.append(wakeups.notify)

    @router.get("/next-op")
    async def next_op(live: LiveTrial = Runner) -> Dict[str, Any]:
        # Async, so a waiting runner holds no worker thread (there are only 40).
        deadline = time.monotonic() + LONG_POLL_SECONDS
        while True:
            woken = wakeups.arm(live.run.id)  # before looking, so no notification is missed
            op = await run_in_threadpool(experiments.next_op, live)
            remaining = deadline - time.monotonic()
            if op is not None or remaining <= 0:
                wakeups.disarm(woken)
                return {"op": op}
            await wakeups.wait(woken, min(remaining, 5.0))

    # The two training routes are async and parse their bodies themselves (one pass of
    # pydantic-core over the bytes): one thread hop per report instead of two.
    @router.post("/training", openapi_extra=json_body_doc(models.Report))
    async def report_training(request: Request, live: LiveTrial = Runner) -> Dict[str, Any]:
        body = await json_body(request, models.Report)
        return await run_in_threadpool(experiments.report_training, live,
                                       [(body.batches, body.metrics)])

    @router.post("/training-batch", openapi_extra=json_body_doc(models.ReportBatch))
    async def report_training_batch(request: Request,
                                    live: LiveTrial = Runner) -> Dict[str, Any]:
        body = await json_body(request, models.ReportBatch)
        return await run_in_threadpool(experiments.report_training, live,
                                       [(r.batches, r.metrics) for r in body.reports])

    @router.post("/validation")
    def report_validation(body: models.ValidationReport,
                          live: LiveTrial = Runner) -> Dict[str, Any]:
        return experiments.report_validation(live, body.batches, body.metrics,
                                             completes_op=body.completes_op,
                                             next_op=body.next_op)

    @router.post("/checkpoint")
    def report_checkpoint(body: models.CheckpointReport,
                          live: LiveTrial = Runner) -> Dict[str, Any]:
        return experiments.report_checkpoint(live, body.batches, body.uuid, body.metadata)

    @router.get("/checkpoints")
    def recorded_checkpoints(live: LiveTrial = Runner) -> Dict[str, Any]:
        """UUIDs of every checkpoint of this trial the master has a record of (any
        state): a restarted runner removes only files no record names."""
        return {"uuids": [c.uuid for c in master.store.list_checkpoints(trial_id=live.trial_id)]}

    @router.post("/validate-op-completed")
    def validate_op_completed(body: models.Report, live: LiveTrial = Runner) -> Dict[str, Any]:
        return experiments.report_validate_op_completed(live, body.metrics)

    @router.post("/early-exit")
    def early_exit(body: models.EarlyExit, live: LiveTrial = Runner) -> Dict[str, Any]:
        return experiments.report_early_exit(live)

    # Script trials (issue 21): progress, the script's exit, and whether to stop (a
    # script may go long without a report to read the answer from).
    @router.post("/progress")
    def report_progress(body: models.ScriptProgress, live: LiveTrial = Runner) -> Dict[str, Any]:
        return experiments.report_progress(live, body.units)

    @router.post("/script-exited")
    def script_exited(body: models.ScriptExited, live: LiveTrial = Runner) -> Dict[str, Any]:
        return experiments.report_script_exited(live, body.code)

    @router.get("/should-stop")
    def should_stop(live: LiveTrial = Runner) -> Dict[str, Any]:
        return experiments.should_stop(live)

    @router.get("/best-validation")
    def best_validation(live: LiveTrial = Runner) -> Dict[str, Any]:
        return {"value": experiments.best_validation(live)}

    @router.get("/is-best")
    def is_best(value: float, live: LiveTrial = Runner) -> Dict[str, Any]:
        return {"best": experiments.is_best(live, value)}

    @router.post("/logs")
    def post_logs(body: models.LogBatch, live: LiveTrial = Runner) -> Dict[str, Any]:
        return {"stored": master.store.add_logs(live.trial_id, body.lines)}

    return router
