"""Errors of ``determined_common.api`` (upstream 0.13 names)."""

from determined.errors import MasterError


class MasterNotFoundException(MasterError):
    """No master answered at the address."""


class BadRequestException(MasterError):
    """The master answered 4xx or 5xx."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class NotFoundException(BadRequestException):
    """The master answered 404."""


class UnauthenticatedException(BadRequestException):
    """The master answered 401: log in with ``det user login``."""

    def __init__(self, username: str = ""):
        super().__init__(f"Unauthenticated{' as ' + username if username else ''}: "
                         "log in with `det user login`", 401)
