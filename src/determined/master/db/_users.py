"""User sessions: log in with a password, resolve a bearer token to its user, log out.

Users themselves (create, rename, activate, passwords) live in ``_cluster.py``; this
mixin adds sessions that expire (``auth_tokens.expires_at``, migration 0002) and the
lookups the REST API's authentication needs.
"""

import datetime
import secrets
from typing import Optional, Tuple

import sqlalchemy as sa

from determined.master.db import _models as m
from determined.master.db._base import StoreBase
from determined.master.db._checks import check_number, check_str
from determined.master.db._cluster import _token_hash, _user_record, verify_password
from determined.master.db._errors import StoreError
from determined.master.db._records import User
from determined.master.db._types import utcnow

__all__ = ["AuthenticationError", "DEFAULT_SESSION_TTL", "UsersMixin"]

#: Seconds a session lasts unless the master config says otherwise (7 days).
DEFAULT_SESSION_TTL = 7 * 24 * 3600.0

_USER = "user"


class AuthenticationError(StoreError):
    """A login failed: unknown user or wrong password (``deactivated`` False), or a
    deactivated user (``deactivated`` True)."""

    def __init__(self, message: str, deactivated: bool = False):
        super().__init__(message)
        self.deactivated = deactivated


class UsersMixin(StoreBase):
    def login(
        self, name: str, password: str, ttl: float = DEFAULT_SESSION_TTL
    ) -> Tuple[str, User]:
        """Check ``name``'s password and open a session lasting ``ttl`` seconds.

        Unknown users and wrong passwords get the same message (no hint which names
        exist); a deactivated user is told so only after a correct password.

        Returns:
            The new bearer token (only its hash is stored) and the user.

        Raises:
            AuthenticationError: the login was refused.
        """
        check_str("name", name)
        check_str("password", password)
        check_number("ttl", ttl, minimum=0)
        with self._read() as s:
            row = s.scalar(sa.select(m.User).where(m.User.username == name))
        if row is None or not verify_password(password, row.password_hash):
            raise AuthenticationError("Invalid username or password")
        if not row.active:
            raise AuthenticationError(f"User {name!r} is deactivated; an admin can run "
                                      f"`det user activate {name}`", deactivated=True)
        token = secrets.token_urlsafe(32)
        now = utcnow()
        with self._write() as s:
            s.execute(sa.delete(m.AuthToken).where(
                m.AuthToken.user_id == row.id, m.AuthToken.kind == _USER,
                m.AuthToken.expires_at < now,
            ))
            s.add(m.AuthToken(
                token_hash=_token_hash(token), kind=_USER, user_id=row.id, created_at=now,
                expires_at=now + datetime.timedelta(seconds=ttl),
            ))
        return token, _user_record(row)

    def session_user(self, token: str) -> Optional[User]:
        """The user of an unexpired session token, active or not; None if unknown/expired.

        Callers check ``User.active`` themselves so they can say why a request fails
        (a deactivated user's sessions work again once the user is activated).
        """
        if not isinstance(token, str) or not token:
            return None
        query = (
            sa.select(m.User, m.AuthToken.expires_at)
            .join(m.AuthToken, m.AuthToken.user_id == m.User.id)
            .where(m.AuthToken.token_hash == _token_hash(token), m.AuthToken.kind == _USER)
        )
        with self._read() as s:
            found = s.execute(query).first()
            if found is None:
                return None
            row, expires_at = found
            if expires_at is not None and expires_at <= utcnow():
                return None
            return _user_record(row)

    def trial_token_owner(self, token: str) -> Optional[User]:
        """The owner of the experiment whose trial holds this runner token, or None."""
        if not isinstance(token, str) or not token:
            return None
        query = (
            sa.select(m.User)
            .join(m.Experiment, m.Experiment.owner_id == m.User.id)
            .join(m.Trial, m.Trial.experiment_id == m.Experiment.id)
            .join(m.AuthToken, m.AuthToken.trial_id == m.Trial.id)
            .where(m.AuthToken.token_hash == _token_hash(token), m.AuthToken.kind == "trial")
        )
        with self._read() as s:
            row = s.scalar(query)
            return _user_record(row) if row is not None else None

    def logout(self, token: str) -> bool:
        """End the session of ``token``; returns whether it existed."""
        if not isinstance(token, str) or not token:
            return False
        with self._write() as s:
            result = s.execute(sa.delete(m.AuthToken).where(
                m.AuthToken.token_hash == _token_hash(token), m.AuthToken.kind == _USER
            ))
            return bool(result.rowcount)

    def purge_expired_sessions(self) -> int:
        """Forget every expired session; returns how many."""
        with self._write() as s:
            result = s.execute(sa.delete(m.AuthToken).where(
                m.AuthToken.kind == _USER, m.AuthToken.expires_at < utcnow()
            ))
            return int(result.rowcount or 0)
