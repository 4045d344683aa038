"""Serve the web UI (the built app of ``webui/``, in ``static/``) and an offline ``/docs``.

``install(app)`` makes the master answer every GET that no route matched with a file of
the build (``/assets/...``, hashed names, cached for a year) or the app's
``index.html``, so deep links such as ``/experiments/12/trials/40`` work on reload;
``/api/...`` paths keep their JSON 404. ``/docs`` is the Swagger UI with its script and
style sheet served from ``static/swagger/`` (copied from npm's ``swagger-ui-dist`` at
build time), so it works on a cluster without internet.

The build is made by ``scripts/setup-venv.sh`` (``npm ci`` and ``npm run build`` in
``webui/``) and carried by the wheel; without one, ``/`` says how to build it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fastapi
from fastapi.openapi.docs import get_swagger_ui_html
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.types import Receive, Scope, Send

__all__ = ["STATIC_DIR", "install", "is_built"]

STATIC_DIR = Path(__file__).resolve().parent / "static"

_NOT_BUILT = """<!doctype html><meta charset="utf-8"><title>Determined</title>
<p>The web UI is not built. Run <code>bash scripts/setup-venv.sh</code> in the source tree
(it runs <code>npm ci</code> and <code>npm run build</code> in <code>webui/</code>), or install
a wheel, which carries the built app. The REST API is at <a href="/docs">/docs</a>.</p>"""


def is_built() -> bool:
    """Whether ``static/index.html`` exists (the app was built)."""
    return (STATIC_DIR / "index.html").is_file()


def _file(path: str) -> Path | None:
    """The build's file for a URL path, or None (never outside ``STATIC_DIR``)."""
    relative = path.lstrip("/")
    if not relative:
        return None
    candidate = (STATIC_DIR / relative).resolve()
    try:
        candidate.relative_to(STATIC_DIR)
    except ValueError:
        return None
    return candidate if candidate.is_file() else None


def _index() -> Response:
    if not is_built():
        return HTMLResponse(_NOT_BUILT)
    return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})


def install(app: fastapi.FastAPI) -> None:
    """Serve the UI and ``/docs`` from ``app`` (create it with ``docs_url=None``)."""
    not_found = app.router.default

    async def default(scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if (scope["type"] != "http" or scope.get("method") not in ("GET", "HEAD")
                or path.startswith("/api/") or path == "/api"):
            await not_found(scope, receive, send)
            return
        found = _file(path)
        response: Response
        if found is None and path.startswith(("/assets/", "/swagger/")):
            await not_found(scope, receive, send)  # a missing build file, not a page
            return
        if found is not None:
            immutable = path.startswith("/assets/")
            response = FileResponse(found, headers={
                "Cache-Control": "public, max-age=31536000, immutable" if immutable
                else "no-cache"})
        else:
            response = _index()
        await response(scope, receive, send)

    app.router.default = default

    @app.get("/docs", include_in_schema=False)
    def docs() -> Any:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} API",
            swagger_js_url="/swagger/swagger-ui-bundle.js",
            swagger_css_url="/swagger/swagger-ui.css",
            swagger_favicon_url="/favicon.svg")


def static_files() -> list:
    """Every file of the build, relative to ``STATIC_DIR`` (for tests and packaging)."""
    if not STATIC_DIR.is_dir():
        return []
    return sorted(str(p.relative_to(STATIC_DIR)) for p in STATIC_DIR.rglob("*") if p.is_file())

