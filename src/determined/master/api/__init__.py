"""The master's REST API (FastAPI) and its uvicorn runner."""

from determined.master.api._app import create_app
from determined.master.api._serve import serve

__all__ = ["create_app", "serve"]
