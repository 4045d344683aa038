"""Sessions of the CLI's token cache (upstream 0.13's ``determined_common.api.authentication``)."""

import hashlib
from typing import Optional

from determined_common.api import request

# Upstream 0.13 clients salted and hashed passwords before sending them with this salt.
PASSWORD_SALT = "GubPEmmotfiK9TMD6Zdw"


def salt_and_hash(password: str) -> str:
    """The salted SHA-512 that upstream 0.13 clients sent instead of a password ('' stays '').
    This master takes passwords as typed; the function is kept for code that uses it."""
    if not password:
        return password
    return hashlib.sha512((PASSWORD_SALT + password).encode()).hexdigest()


class Session:
    """A logged-in user and their token."""

    def __init__(self, username: str, token: str):
        self.username = username
        self.token = token


class Authentication:
    """The session of the active user of ``$DET_MASTER`` (from ``det user login``).

    Example:
        >>> Authentication.instance().get_session_user()     # doctest: +SKIP
        'determined'
    """

    _instance: Optional["Authentication"] = None

    def __init__(self) -> None:
        from determined.common.api import Authenticator

        self._auth = Authenticator(request.default_master())
        self.session: Optional[Session] = None

    @classmethod
    def instance(cls) -> "Authentication":
        if cls._instance is None:
            cls._instance = Authentication()
        return cls._instance

    def is_user_active(self, username: str) -> bool:
        return self._auth.cache.active_user(self._auth.master) == username

    def get_session_user(self) -> str:
        return self._auth.username

    def get_session_token(self) -> str:
        token = self._auth.token()
        self.session = Session(self._auth.username, token)
        return token

    def reset_session(self) -> None:
        self._auth.forget()
        self.session = None
