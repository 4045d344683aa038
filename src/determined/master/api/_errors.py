"""The error a route raises: an HTTP status and a message for the caller.

The application's handler (``_app.py``) answers it as ``{"error": message}``.
"""

import fastapi

__all__ = ["fail"]


def fail(status: int, message: str) -> fastapi.HTTPException:
    """The exception to raise for an answer ``status`` saying ``message``.

    Example: ``raise fail(404, f"Task {id!r} not found")``.
    """
    return fastapi.HTTPException(status_code=status, detail=message)
