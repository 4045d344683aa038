"""The REST API (``/api/v1``): FastAPI routes over :class:`determined.master._core.Master`.

This module builds the application: its error handlers, the cluster routes and the
routers of every route group (experiments and trials in ``_experiments.py``, trial
runners in ``_trial_runner.py``, tasks, users, agents, the model registry, ...).

Errors are JSON ``{"error": message, "details": [{"field", "message"}]}`` with 400
(bad request or config), 401 (no valid user or trial-runner token; users and sessions
in ``_auth.py``), 403 (not the experiment's owner or an admin), 404 (unknown id), 409
(illegal state transition or a taken name) or 413 (context too large).
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional

import fastapi
from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

import determined
from determined.common.api import ContextArchiveError
from determined.common.wording import counted
from determined.config import ConfigLimitError
from determined.errors import InvalidConfigError, InvalidModelDefError
from determined.master._core import Master
from determined.master.api._agents import agent_auth, agents_listing, agents_router
from determined.master.api._auth import Auth
from determined.master.api._body_limit import BodyLimit
from determined.master.api._bounds import int64_params
from determined.master.api._uuid_params import checkpoint_uuid_params
from determined.master.api._checkpoint_download import checkpoint_download_router
from determined.master.api._errors import APIError
from determined.master.api._experiments import experiments_router
from determined.master.api._gpu_metrics import gpu_metrics_router
from determined.master.api._operations import operations_router
from determined.master.api._proxy import proxy_router
from determined.master.api._registry import registry_router
from determined.master.api._tasks import tasks_router
from determined.master.api._trial_runner import PREFIX as RUNNER_PREFIX
from determined.master.api._trial_runner import trial_runner_router
from determined.master.api._ui import ui_router
from determined.master.db import ConflictError, IllegalTransitionError, NotFoundError
from determined.master.experiments import ContextQuotaError
from determined.master import views, webui
from determined.searcher import SearcherError

__all__ = ["create_app"]

logger = logging.getLogger(__name__)


def _error(status: int, message: str, details: Optional[List[Dict[str, str]]] = None) -> JSONResponse:
    body: Dict[str, Any] = {"error": message}
    if details:
        body["details"] = details
    return JSONResponse(body, status_code=status)


def create_app(master: Master) -> fastapi.FastAPI:
    """The FastAPI application serving ``master`` (OpenAPI at ``/openapi.json``)."""
    # /docs is served by webui.install, with Swagger UI assets from the package (offline).
    app = fastapi.FastAPI(title="Determined master", version=determined.__version__,
                          docs_url=None)
    app.router.dependencies.append(Depends(int64_params))  # ids and counts fit int64
    app.router.dependencies.append(Depends(checkpoint_uuid_params))  # 400, not 404
    app.add_middleware(BodyLimit, limit=lambda: master.config.limits.max_request_bytes)
    api = fastapi.APIRouter(prefix="/api/v1")
    auth = Auth(master)  # users, sessions, ownership: _auth.py

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
        runner = request.url.path.startswith(RUNNER_PREFIX + "/")
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
        # A validator's own message as it wrote it, without pydantic's "Value error, ".
        details = [
            {"field": ".".join(str(p) for p in err["loc"] if p != "body"),
             "message": err["msg"].removeprefix("Value error, ")
             if err.get("type") == "value_error" else err["msg"]}
            for err in exc.errors()
        ]
        return _error(400, f"Invalid request ({counted(len(details), 'error')})", details)

    # Starlette's own class: it also raises it for paths no route matches.
    @app.exception_handler(StarletteHTTPException)
    def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = str(exc.detail)
        if exc.status_code in (404, 405) and message in ("Not Found", "Method Not Allowed"):
            path = request.url.path
            message = (f"No API route {request.method} {path} (the routes are listed at "
                       "/docs)" if path.startswith("/api/") else f"Nothing at {path}")
        response = _error(exc.status_code, message)
        response.headers.update(exc.headers or {})
        return response

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

    # Trial runners first: FastAPI tries routes in order, and theirs are the most frequent.
    app.include_router(trial_runner_router(master))
    app.include_router(api, dependencies=[Depends(auth.resolve)])
    app.include_router(experiments_router(master, auth.caller),
                       dependencies=[Depends(auth.resolve)])
    app.include_router(auth.router(), dependencies=[Depends(auth.resolve)])
    app.include_router(tasks_router(master, auth), dependencies=[Depends(auth.resolve)])
    app.include_router(proxy_router(master))  # checks logins itself: never anonymous
    app.include_router(operations_router(master, auth.caller),
                       dependencies=[Depends(auth.resolve)])
    app.include_router(registry_router(master, auth.caller, views.checkpoint_json),
                       dependencies=[Depends(auth.resolve)])
    app.include_router(checkpoint_download_router(master), dependencies=[Depends(auth.resolve)])
    app.include_router(gpu_metrics_router(master), dependencies=[Depends(auth.resolve)])
    # Agents authenticate with security.agent_token, not as users (see _agents.py).
    app.include_router(agents_router(master), dependencies=[Depends(agent_auth(master))])
    app.include_router(ui_router(master), dependencies=[Depends(auth.resolve)])
    webui.install(app)  # the web UI at / (SPA fallback for GETs no route matched)
    return app
