"""The REST API (``/api/v1``): FastAPI routes over :class:`determined.master._core.Master`.

Errors are JSON ``{"error": message, "details": [{"field", "message"}]}`` with 400
(bad request or config), 401 (no valid user or trial-runner token; users and sessions
in ``_auth.py``), 403 (not the experiment's owner or an admin), 404 (unknown id), 409
(illegal state transition or a taken name) or 413 (context too large).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import time
from typing import Any, Dict, List, Optional, Set, Tuple, Type, TypeVar

import fastapi
import pydantic
from fastapi import Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

import determined
from determined.common.api import MAX_CONTEXT_BYTES, ContextArchiveError
from determined.common.validation import validate_experiment
from determined.config import (
    ConfigLimitError,
    check_config_json,
    check_config_text,
    config_warnings,
    parse_yaml,
)
from determined.errors import InvalidConfigError, InvalidModelDefError
from determined.master._core import ContextQuotaError, Master
from determined.master.api import _models as models
from determined.master.api._agents import agent_auth, agents_listing, agents_router
from determined.master.api._auth import Auth, check_owner
from determined.master.api._proxy import proxy_router
from determined.master.api._tasks import tasks_router
from determined.master.api._ui import ui_router
from determined.master.api._body_limit import BodyLimit
from determined.master.api._bounds import int64_params
from determined.master.db import (
    TERMINAL_STATES,
    ConflictError,
    IllegalTransitionError,
    NotFoundError,
    User,
)
from determined.master.experiments import ExperimentRun, TrialHandle
from determined.master import views, webui
from determined.searcher import SearcherError

__all__ = ["create_app"]

logger = logging.getLogger(__name__)

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


class APIError(Exception):
    def __init__(self, status: int, message: str, details: Optional[List[Dict[str, str]]] = None):
        super().__init__(message)
        self.status, self.message, self.details = status, message, details or []


def _error(status: int, message: str, details: Optional[List[Dict[str, str]]] = None) -> JSONResponse:
    body: Dict[str, Any] = {"error": message}
    if details:
        body["details"] = details
    return JSONResponse(body, status_code=status)


Body = TypeVar("Body", bound=pydantic.BaseModel)


async def _json_body(request: Request, model: Type[Body]) -> Body:
    """The request's JSON body as ``model``, errors as FastAPI's own body validation
    reports them (a 400 naming the fields)."""
    try:
        return model.model_validate_json(await request.body())
    except pydantic.ValidationError as e:
        raise RequestValidationError(
            [dict(err, loc=("body", *err["loc"])) for err in e.errors(include_url=False)]
        ) from None


def _json_body_doc(model: Type[pydantic.BaseModel]) -> Dict[str, Any]:
    """OpenAPI of a JSON body that a route parses with :func:`_json_body`: the model's
    JSON schema with its nested models inlined (its ``#/$defs/...`` references would
    not resolve inside the OpenAPI document)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(defs[ref[len("#/$defs/"):]])
            return {k: inline(v) for k, v in node.items()}
        return [inline(v) for v in node] if isinstance(node, list) else node

    return {"requestBody": {"required": True,
                            "content": {"application/json": {"schema": inline(schema)}}}}


def _experiment_json(master: Master, id: int, with_config: bool = True) -> Dict[str, Any]:
    out = views.experiment_json(master.store, id, with_config)
    if with_config:  # per trial: whether it holds slots now (else an ACTIVE one waits)
        with master.lock:
            held = set(master.allocations)
        for trial in out["trials"]:
            trial["running"] = f"trial-{trial['id']}" in held
    return out


_trial_json = views.trial_json
_checkpoint_json = views.checkpoint_json


def create_app(master: Master) -> fastapi.FastAPI:
    """The FastAPI application serving ``master`` (OpenAPI at ``/openapi.json``)."""
    # /docs is served by webui.install, with Swagger UI assets from the package (offline).
    app = fastapi.FastAPI(title="Determined master", version=determined.__version__,
                          docs_url=None)
    app.router.dependencies.append(Depends(int64_params))  # ids and counts fit int64
    app.add_middleware(BodyLimit, limit=lambda: master.config.limits.max_request_bytes)
    api = fastapi.APIRouter(prefix="/api/v1")
    auth = Auth(master)  # users, sessions, ownership: _auth.py
    Caller = Depends(auth.caller)

    @app.exception_handler(APIError)
    def _api_error(request: Request, exc: APIError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.details)

    @app.exception_handler(NotFoundError)
    def _not_found(request: Request, exc: NotFoundError) -> JSONResponse:
        return _error(404, str(exc))

    @app.exception_handler(IllegalTransitionError)
    def _illegal(request: Request, exc: IllegalTransitionError) -> JSONResponse:
        return _error(409, str(exc))

    @app.exception_handler(ConflictError)
    @app.exception_handler(SearcherError)
    def _conflict(request: Request, exc: Exception) -> JSONResponse:
        return _error(409, str(exc))

    @app.exception_handler(ValueError)
    def _value_error(request: Request, exc: ValueError) -> JSONResponse:
        # A report that does not fit the trial's state (a checkpoint reported twice, a
        # Validate done while training) is a conflict; elsewhere a value was refused.
        runner = request.url.path.startswith("/api/v1/trial-runner/")
        # One line: a refusal is the caller's mistake, not the master's (no traceback).
        logger.warning("%s %s refused: %s", request.method, request.url.path, exc)
        return _error(409 if runner else 400, str(exc))

    @app.exception_handler(ConfigLimitError)
    def _config_limit(request: Request, exc: ConfigLimitError) -> JSONResponse:
        return _error(exc.status, str(exc), [{"field": "config", "message": exc.limit}])

    @app.exception_handler(ContextQuotaError)
    def _quota(request: Request, exc: ContextQuotaError) -> JSONResponse:
        return _error(413, str(exc), [{"field": "model_def", "message": exc.limit}])

    @app.exception_handler(InvalidConfigError)
    def _bad_config(request: Request, exc: InvalidConfigError) -> JSONResponse:
        return _error(400, str(exc), [{"field": f, "message": m} for f, m in exc.errors])

    @app.exception_handler(InvalidModelDefError)
    def _bad_model_def(request: Request, exc: InvalidModelDefError) -> JSONResponse:
        member = exc.member if isinstance(exc, ContextArchiveError) else None
        return _error(400, str(exc), [{"field": "model_def", "message": member or str(exc)}])

    @app.exception_handler(RequestValidationError)
    def _bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        details = [
            {"field": ".".join(str(p) for p in err["loc"] if p != "body"), "message": err["msg"]}
            for err in exc.errors()
        ]
        return _error(400, f"Invalid request ({len(details)} error(s))", details)

    @app.exception_handler(fastapi.HTTPException)
    def _http(request: Request, exc: fastapi.HTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))

    # -- cluster ---------------------------------------------------------------------

    @api.get("/master")
    def get_master() -> Dict[str, Any]:
        return master.master_info()

    @api.get("/master/config")
    def get_master_config() -> Dict[str, Any]:
        return master.config.public()

    @api.get("/agents")
    def list_agents() -> Dict[str, Any]:
        """Live agents (embedded and remote), their slots and the task on each."""
        return agents_listing(master)

    # -- experiments -------------------------------------------------------------------

    @api.post("/experiments", status_code=201,
              openapi_extra=_json_body_doc(models.CreateExperiment))
    async def create_experiment(request: Request, user: User = Caller) -> Dict[str, Any]:
        # The body is read here, not by FastAPI: its config's keys and depth are
        # bounded before anything is decoded (limits.*; the body's size by BodyLimit).
        raw = await request.body()
        limits = master.config.limits
        await run_in_threadpool(check_config_json, raw, limits.max_config_keys,
                                limits.max_config_depth)
        body = await _json_body(request, models.CreateExperiment)
        return await run_in_threadpool(_create_experiment, body, user)

    def _create_experiment(body: models.CreateExperiment, user: User) -> Dict[str, Any]:
        limits = master.config.limits
        try:
            packed = base64.b64decode(body.model_def, validate=True)
        except (binascii.Error, ValueError):
            raise APIError(400, "model_def is not valid base64",
                           [{"field": "model_def", "message": "expected base64 of a tar.gz"}])
        if len(packed) > MAX_CONTEXT_BYTES:
            raise APIError(413, f"The context directory is {len(packed) / 1e6:.1f} MB packed; the "
                                f"limit is {MAX_CONTEXT_BYTES / 1e6:.0f} MB. Exclude large files "
                                "with a .detignore file.")
        raw: Any = body.config
        if isinstance(raw, str):
            check_config_text(raw, limits.max_config_bytes, limits.max_config_keys,
                              limits.max_config_depth)
            try:
                raw = parse_yaml(raw)
            except InvalidConfigError as e:
                reason = e.errors[0][1] if e.errors else str(e)
                raise APIError(400, f"The config is not valid YAML: {reason}") from None
            except Exception as e:
                raise APIError(400, f"The config is not valid YAML: {e}") from None
        # Everything that could fail later is checked before the experiment is stored.
        valid = validate_experiment(raw, default_storage=master.config.checkpoint_storage,
                                    context=packed, max_context_ratio=limits.max_context_ratio,
                                    context_ratio_floor=limits.min_context_ratio_bytes)
        config = valid.config
        exp_id = master.create_experiment(
            config, packed, body.activate, owner=user.username,
            git=body.git.model_dump() if body.git else None,
            context_bytes=valid.context.unpacked_bytes if valid.context else len(packed))
        # Fields accepted without effect here (container-only), one line each.
        return {"id": exp_id, "warnings": config_warnings(raw) if isinstance(raw, dict) else []}

    @api.get("/experiments")
    def list_experiments(archived: bool = False, user: Optional[str] = Query(
            None, description="only this user's experiments")) -> Dict[str, Any]:
        if user is not None:
            master.store.get_user(user)  # 404 for an unknown user
        return {"experiments": views.experiments_json(master.store, archived, user)}

    @api.get("/experiments/{id}")
    def get_experiment(id: int) -> Dict[str, Any]:
        return _experiment_json(master, id)

    def _action(id: int, action: str, user: User) -> Dict[str, Any]:
        with master.lock:
            exp = master.store.get_experiment(id)
            check_owner(user, exp.owner, f"experiment {id}", action)
            run: Optional[ExperimentRun] = master.runs.get(id)
            if action in ("cancel", "kill"):
                if run is not None:
                    run.cancel(kill=action == "kill")
            elif action in ("pause", "activate"):
                target = "PAUSED" if action == "pause" else "ACTIVE"
                if run is None or run.state not in ("ACTIVE", "PAUSED"):
                    master.store.set_experiment_state(id, target)  # raises: illegal
                elif action == "pause":
                    run.pause()
                else:
                    run.activate()
            elif action in ("archive", "unarchive"):
                if exp.state not in TERMINAL_STATES:
                    raise APIError(409, f"Experiment {id} is {exp.state}; only finished "
                                        "experiments (COMPLETED, CANCELED, ERROR) can be "
                                        f"{action}d")
                master.store.update_experiment(id, archived=action == "archive")
        return _experiment_json(master, id, with_config=False)

    for _verb in ("pause", "activate", "cancel", "kill", "archive", "unarchive"):
        def _handler(id: int, user: User = Caller, _v: str = _verb) -> Dict[str, Any]:
            return _action(id, _v, user)
        api.add_api_route(f"/experiments/{{id}}/{_verb}", _handler, methods=["POST"],
                          name=f"{_verb}_experiment")

    @api.patch("/experiments/{id}")
    def patch_experiment(id: int, body: models.Patch, user: User = Caller) -> Dict[str, Any]:
        check_owner(user, master.store.get_experiment(id).owner, f"experiment {id}", "edit")
        changes = body.model_dump(exclude_none=True)
        master.store.update_experiment(id, **changes)
        live = {k: v for k, v in changes.items() if k in ("weight", "priority", "max_slots")}
        if live:
            with master.lock:  # the scheduler reads these from the running experiment
                run = master.runs.get(id)
                if run is not None:
                    run.config.setdefault("resources", {}).update(live)
                master.changed()
        return _experiment_json(master, id, with_config=False)

    @api.get("/experiments/{id}/trials")
    def list_trials(id: int) -> Dict[str, Any]:
        master.store.get_experiment(id)
        return {"trials": [_trial_json(t) for t in master.store.list_trials(id)]}

    @api.get("/experiments/{id}/checkpoints")
    def list_checkpoints(id: int) -> Dict[str, Any]:
        master.store.get_experiment(id)
        return {"checkpoints": [_checkpoint_json(c)
                                for c in master.store.list_checkpoints(experiment_id=id)]}

    @api.get("/experiments/{id}/model_def")
    def get_model_def(id: int) -> Dict[str, Any]:
        """The uploaded context directory: ``{"b64_tgz": base64 of the tar.gz}``."""
        return views.model_def_json(master.store, id)

    @api.get("/trials/{id}")
    def get_trial(id: int) -> Dict[str, Any]:
        return views.trial_with_metrics_json(master.store, id)

    @api.post("/trials/{id}/kill")
    def kill_trial(id: int, user: User = Caller) -> Dict[str, Any]:
        exp_id = master.store.get_trial(id).experiment_id
        check_owner(user, master.store.get_experiment(exp_id).owner, f"trial {id}", "kill")
        with master.lock:
            found = master.trials.get(id)
            if found is not None:
                found[0].kill_trial(found[1])
            else:
                run = next((r for r in master.runs.values()
                            if any(t.trial_id == id for t in r.trials.values())), None)
                if run is not None:
                    run.kill_trial(next(t for t in run.trials.values() if t.trial_id == id))
        return _trial_json(master.store.get_trial(id))

    @api.get("/trials/{id}/logs")
    def get_logs(id: int, after_id: int = Query(0, ge=0), limit: int = Query(1000, ge=0),
                 tail: Optional[int] = Query(None, ge=0)) -> Dict[str, Any]:
        return views.logs_json(master.store, id, after_id, limit, tail)

    @api.get("/checkpoints/{uuid}")
    def get_checkpoint(uuid: str) -> Dict[str, Any]:
        return _checkpoint_json(master.store.get_checkpoint(uuid))

    # -- trial runner ---------------------------------------------------------------------
    # Their own router, matched before every other route (FastAPI tries routes in order,
    # at some cost each: the runners' reports are the master's most frequent requests).
    # No user to resolve: the runner dependency checks the trial's token.
    runner_api = fastapi.APIRouter(prefix="/api/v1/trial-runner")

    async def runner(request: Request) -> Tuple[ExperimentRun, TrialHandle]:
        # Async (no thread hop per report): the token check is a cached lookup, and one
        # dict read needs no lock. The header is read directly: a Header() parameter
        # costs FastAPI a validation per request.
        authorization = request.headers.get("authorization")
        if not authorization or not authorization.startswith("Bearer "):
            raise APIError(401, "Trial-runner calls need 'Authorization: Bearer <trial token>'")
        trial_id = master.store.check_trial_token(authorization[len("Bearer "):].strip())
        found = master.trials.get(trial_id) if trial_id is not None else None
        if found is None:
            raise APIError(401, "Unknown or expired trial token")
        return found

    Runner = Tuple[ExperimentRun, TrialHandle]

    def _answer(run: ExperimentRun, t: TrialHandle) -> Dict[str, Any]:
        run.refresh_progress()  # throttled; reports are when trained lengths change
        return {"stop": run.must_stop(t)}

    wakeups = _Wakeups()
    master.cond.listeners.append(wakeups.notify)

    def next_op_now(run: ExperimentRun, t: TrialHandle) -> Optional[Dict[str, Any]]:
        with master.lock:
            return run.next_op(t)

    @runner_api.get("/next-op")
    async def next_op(found: Runner = Depends(runner)) -> Dict[str, Any]:
        # Async, so a waiting runner holds no worker thread (there are only 40).
        run, t = found
        deadline = time.monotonic() + LONG_POLL_SECONDS
        while True:
            woken = wakeups.arm(run.id)  # before looking, so no notification is missed
            op = await run_in_threadpool(next_op_now, run, t)
            remaining = deadline - time.monotonic()
            if op is not None or remaining <= 0:
                wakeups.disarm(woken)
                return {"op": op}
            await wakeups.wait(woken, min(remaining, 5.0))

    def store_training(run: ExperimentRun, t: TrialHandle,
                       reports: List[models.Report]) -> Dict[str, Any]:
        run.training_many(t, [(r.batches, r.metrics) for r in reports])  # group commit
        with master.lock:
            return _answer(run, t)

    # The two training routes are async and parse their bodies themselves (one pass of
    # pydantic-core over the bytes): one thread hop per report instead of two.
    @runner_api.post("/training", openapi_extra=_json_body_doc(models.Report))
    async def report_training(request: Request, found: Runner = Depends(runner)) -> Dict[str, Any]:
        body = await _json_body(request, models.Report)
        return await run_in_threadpool(store_training, *found, [body])

    @runner_api.post("/training-batch", openapi_extra=_json_body_doc(models.ReportBatch))
    async def report_training_batch(request: Request,
                                    found: Runner = Depends(runner)) -> Dict[str, Any]:
        body = await _json_body(request, models.ReportBatch)
        return await run_in_threadpool(store_training, *found, body.reports)

    @runner_api.post("/validation")
    def report_validation(body: models.ValidationReport,
                          found: Runner = Depends(runner)) -> Dict[str, Any]:
        run, t = found
        with master.lock:
            run.validation(t, body.batches, body.metrics)
            out: Dict[str, Any] = {}
            if body.completes_op:  # saves the trial two requests at the end of its op
                run.validate_op_completed(t, body.metrics)
                if body.next_op:
                    out["op"] = run.next_op(t)
            out.update(_answer(run, t))
            return out

    @runner_api.post("/checkpoint")
    def report_checkpoint(body: models.CheckpointReport,
                          found: Runner = Depends(runner)) -> Dict[str, Any]:
        run, t = found
        run.checkpoint(t, body.batches, body.uuid, body.metadata)  # locks after its file walk
        with master.lock:
            return _answer(run, t)

    @runner_api.get("/checkpoints")
    def recorded_checkpoints(found: Runner = Depends(runner)) -> Dict[str, Any]:
        """UUIDs of every checkpoint of this trial the master has a record of (any
        state): a restarted runner removes only files no record names."""
        return {"uuids": [c.uuid for c in master.store.list_checkpoints(
            trial_id=found[1].trial_id)]}

    @runner_api.post("/validate-op-completed")
    def validate_op_completed(body: models.Report,
                              found: Runner = Depends(runner)) -> Dict[str, Any]:
        run, t = found
        with master.lock:
            run.validate_op_completed(t, body.metrics)
            return _answer(run, t)

    @runner_api.post("/early-exit")
    def early_exit(body: models.EarlyExit, found: Runner = Depends(runner)) -> Dict[str, Any]:
        run, t = found
        with master.lock:
            run.early_exit(t)
            return _answer(run, t)

    # Script trials (issue 21): progress, the script's exit, and whether to stop (a
    # script may go long without a report to read the answer from).
    @runner_api.post("/progress")
    def script_progress(body: models.ScriptProgress,
                        found: Runner = Depends(runner)) -> Dict[str, Any]:
        run, t = found
        with master.lock:
            run.script_progress(t, body.units)
            return _answer(run, t)

    @runner_api.post("/script-exited")
    def script_exited(body: models.ScriptExited,
                      found: Runner = Depends(runner)) -> Dict[str, Any]:
        run, t = found
        with master.lock:
            run.script_exited(t, body.code)
            return _answer(run, t)

    @runner_api.get("/should-stop")
    def should_stop(found: Runner = Depends(runner)) -> Dict[str, Any]:
        with master.lock:
            return _answer(*found)

    @runner_api.get("/is-best")
    def is_best(value: float, found: Runner = Depends(runner)) -> Dict[str, Any]:
        run, _ = found
        with master.lock:
            return {"best": run.is_best(value)}

    @runner_api.post("/logs")
    def post_logs(body: models.LogBatch, found: Runner = Depends(runner)) -> Dict[str, Any]:
        _, t = found
        return {"stored": master.store.add_logs(t.trial_id, body.lines)}

    app.include_router(runner_api)
    app.include_router(api, dependencies=[Depends(auth.resolve)])
    app.include_router(auth.router(), dependencies=[Depends(auth.resolve)])
    app.include_router(tasks_router(master, auth), dependencies=[Depends(auth.resolve)])
    app.include_router(proxy_router(master))  # checks logins itself: never anonymous
    # Master parity (issue 9 parts 5-6): _operations.py, _registry.py.
    from determined.master.api._operations import operations_router
    from determined.master.api._registry import registry_router

    app.include_router(operations_router(master, auth.caller),
                       dependencies=[Depends(auth.resolve)])
    app.include_router(registry_router(master, auth.caller, _checkpoint_json),
                       dependencies=[Depends(auth.resolve)])
    from determined.master.api._checkpoint_download import checkpoint_download_router

    app.include_router(checkpoint_download_router(master), dependencies=[Depends(auth.resolve)])
    from determined.master.api._gpu_metrics import gpu_metrics_router

    app.include_router(gpu_metrics_router(master), dependencies=[Depends(auth.resolve)])
    # Agents authenticate with security.agent_token, not as users (see _agents.py).
    app.include_router(agents_router(master), dependencies=[Depends(agent_auth(master))])
    app.include_router(ui_router(master), dependencies=[Depends(auth.resolve)])
    webui.install(app)  # the web UI at / (SPA fallback for GETs no route matched)
    return app
