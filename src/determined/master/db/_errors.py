"""Errors raised by the store.

::

    DeterminedError                      (determined.errors)
    └── StoreError                       the database refused or failed an operation
        ├── NotFoundError                no such id / uuid / name (also a LookupError)
        ├── ConflictError                a unique key is already taken
        └── IllegalTransitionError       a state change SPEC 1.4 forbids (also a ValueError)
"""

from determined.errors import DeterminedError

__all__ = ["ConflictError", "IllegalTransitionError", "NotFoundError", "StoreError"]


class StoreError(DeterminedError):
    """The database refused or failed an operation, or the store is closed."""


class NotFoundError(StoreError, LookupError):
    """No experiment, trial, checkpoint, user or agent with the given key."""

    def __init__(self, entity: str, key: object, message: str = ""):
        self.entity = entity
        self.key = key
        super().__init__(message or f"{entity} {key!r} not found")


class ConflictError(StoreError):
    """A unique key (trial request id, checkpoint uuid, user name) is already taken."""


class IllegalTransitionError(StoreError, ValueError):
    """A state change that the lifecycle (SPEC 1.4) does not allow."""

    def __init__(self, entity: str, key: object, from_state: str, to_state: str, allowed):
        self.entity = entity
        self.key = key
        self.from_state = from_state
        self.to_state = to_state
        where = (f"which can become {', '.join(sorted(allowed))}" if allowed
                 else "which has ended (a final state)")
        super().__init__(f"{entity} {key}: {from_state} -> {to_state} is not allowed; "
                         f"{entity} {key} is {from_state}, {where}")
