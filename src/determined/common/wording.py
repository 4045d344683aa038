"""Words for the lines people read (logs, CLI output)."""

from __future__ import annotations

from typing import Optional

__all__ = ["NO_SCRIPT_CHECKPOINT", "counted"]

#: The line a script's test run ends with when it stored no checkpoint (local and remote).
NO_SCRIPT_CHECKPOINT = ("The script stored no checkpoint: store one with "
                        "core.checkpoint.store_path or core.checkpoint.upload (a trial without "
                        "one starts over after a pause or a failure)")


def counted(n: int, singular: str, plural: Optional[str] = None) -> str:
    """``n`` and the noun that agrees with it.

    Example:
        >>> counted(1, "batch"), counted(2, "batch"), counted(0, "step")
        ('1 batch', '2 batches', '0 steps')
    """
    if n == 1:
        return f"{n} {singular}"
    if plural is None:
        plural = singular + ("es" if singular.endswith(("s", "sh", "ch", "x", "z")) else "s")
    return f"{n} {plural}"
