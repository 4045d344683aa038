"""The errors a route raises: an HTTP status and a message for the caller.

The application's handlers (``_app.py``) answer them as ``{"error": message}``, with
``"details": [{"field", "message"}]`` where an :class:`APIError` names fields.
"""

from typing import Dict, List, Optional

import fastapi

__all__ = ["APIError", "fail"]


class APIError(Exception):
    """An answer ``status`` saying ``message``, with ``details`` naming fields."""

    def __init__(self, status: int, message: str, details: Optional[List[Dict[str, str]]] = None):
        super().__init__(message)
        self.status, self.message, self.details = status, message, details or []


def fail(status: int, message: str) -> fastapi.HTTPException:
    """The exception to raise for an answer ``status`` saying ``message``.

    Example: ``raise fail(404, f"Task {id!r} not found")``.
    """
    return fastapi.HTTPException(status_code=status, detail=message)
