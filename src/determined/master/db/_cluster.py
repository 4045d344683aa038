"""Agents, users and bearer tokens (trial runners' and logged-in users')."""

import hashlib
import hmac
import secrets
from typing import Any, Dict, List, Optional

import sqlalchemy as sa

from determined.master.db import _models as m
from determined.master.db._base import StoreBase
from determined.master.db._checks import UNSET, check_bool, check_dict, check_int, check_str
from determined.master.db._errors import ConflictError, NotFoundError
from determined.master.db._records import Agent, User
from determined.master.db._types import utcnow

__all__ = ["ClusterMixin", "hash_password", "verify_password"]

_PBKDF2_ITERATIONS = 100_000
_TRIAL = "trial"
_USER = "user"


def hash_password(password: str) -> Optional[str]:
    """``pbkdf2_sha256$iterations$salt$hash``; None for the blank password."""
    if password == "":
        return None
    salt = secrets.token_hex(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), _PBKDF2_ITERATIONS)
    return f"pbkdf2_sha256${_PBKDF2_ITERATIONS}${salt}${digest.hex()}"


def verify_password(password: str, stored: Optional[str]) -> bool:
    if stored is None:
        return password == ""
    try:
        scheme, iterations, salt, expected = stored.split("$")
    except ValueError:
        return False
    if scheme != "pbkdf2_sha256":
        return False
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), int(iterations))
    return hmac.compare_digest(digest.hex(), expected)


def _token_hash(token: str) -> str:
    # Tokens are 256 random bits, so a fast hash is enough to make a stolen table useless.
    return hashlib.sha256(token.encode()).hexdigest()


def _agent_record(row: Any) -> Agent:
    return Agent(
        id=row.id,
        slots=row.slots,
        label=row.label,
        enabled=row.enabled,
        registered_at=row.registered_at,
        last_seen=row.last_seen,
    )


def _user_record(row: m.User) -> User:
    return User(
        id=row.id,
        username=row.username,
        admin=row.admin,
        active=row.active,
        has_password=row.password_hash is not None,
        agent_user_group=None if row.agent_uid is None else {
            "agent_uid": row.agent_uid, "agent_gid": row.agent_gid,
            "agent_user": row.agent_user, "agent_group": row.agent_group},
    )


class ClusterMixin(StoreBase):
    # -- agents -------------------------------------------------------------------------

    def upsert_agent(
        self, id: str, slots: int, label: str = "", enabled: Optional[bool] = None
    ) -> Agent:
        """Register an agent or refresh it (slots, label, ``last_seen``).

        ``enabled=None`` keeps an existing agent's flag (new agents start enabled), so
        an agent reconnecting does not undo ``det agent disable``.
        """
        check_str("id", id, nonempty=True)
        check_int("slots", slots, minimum=0)
        check_str("label", label)
        if enabled is not None:
            check_bool("enabled", enabled)
        t = m.Agent.__table__
        now = utcnow()
        stmt = self._insert(t).values(
            id=id,
            slots=slots,
            label=label,
            enabled=True if enabled is None else enabled,
            registered_at=now,
            last_seen=now,
        )
        update = {"slots": stmt.excluded.slots, "label": stmt.excluded.label, "last_seen": now}
        if enabled is not None:
            update["enabled"] = enabled
        stmt = stmt.on_conflict_do_update(index_elements=[t.c.id], set_=update)
        with self._write() as s:
            s.execute(stmt)
            return _agent_record(s.execute(sa.select(t).where(t.c.id == id)).one())

    def list_agents(self) -> List[Agent]:
        """Every registered agent, by id."""
        t = m.Agent.__table__
        with self._read() as s:
            return [_agent_record(row) for row in s.execute(sa.select(t).order_by(t.c.id))]

    def set_agent_enabled(self, id: str, enabled: bool) -> Agent:
        """Enable or disable scheduling onto an agent; raises NotFoundError."""
        check_bool("enabled", enabled)
        with self._write() as s:
            row = self._get(s, m.Agent, id, "agent", lock=True)
            row.enabled = enabled
            return _agent_record(row)

    # -- users ---------------------------------------------------------------------------

    def get_user(self, name: str) -> User:
        """The user ``name`` (``admin`` and ``determined`` always exist); NotFoundError."""
        with self._read() as s:
            row = s.scalar(sa.select(m.User).where(m.User.username == name))
            if row is None:
                raise NotFoundError("user", name)
            return _user_record(row)

    def list_users(self) -> List[User]:
        with self._read() as s:
            return [_user_record(r) for r in s.scalars(sa.select(m.User).order_by(m.User.id))]

    def create_user(self, name: str, admin: bool = False, password: str = "") -> User:
        """Add an active user; raises ConflictError if the name is taken."""
        check_str("name", name, nonempty=True)
        check_bool("admin", admin)
        check_str("password", password)
        with self._write() as s:
            if s.scalar(sa.select(m.User.id).where(m.User.username == name)) is not None:
                raise ConflictError(f"User {name!r} already exists")
            row = m.User(
                username=name, admin=admin, active=True,
                password_hash=hash_password(password), created_at=utcnow(),
            )
            s.add(row)
            self._flush_or_conflict(s, f"User {name!r} already exists")
            return _user_record(row)

    def update_user(
        self, name: str, *, admin: Any = UNSET, active: Any = UNSET, new_name: Any = UNSET,
        agent_user_group: Any = UNSET,
    ) -> User:
        """Change the given fields of user ``name`` (``new_name`` renames;
        ``agent_user_group``: ``{agent_uid, agent_gid, agent_user, agent_group}``)."""
        if agent_user_group is not UNSET:
            agent_user_group = check_dict("agent_user_group", agent_user_group)
            for key in ("agent_uid", "agent_gid"):
                check_int(f"agent_user_group.{key}", agent_user_group.get(key), minimum=0)
            for key in ("agent_user", "agent_group"):
                check_str(f"agent_user_group.{key}", agent_user_group.get(key), nonempty=True)
        with self._write() as s:
            row = s.scalar(sa.select(m.User).where(m.User.username == name).with_for_update())
            if row is None:
                raise NotFoundError("user", name)
            if admin is not UNSET:
                row.admin = check_bool("admin", admin)
            if active is not UNSET:
                row.active = check_bool("active", active)
            if agent_user_group is not UNSET:
                for key in ("agent_uid", "agent_gid", "agent_user", "agent_group"):
                    setattr(row, key, agent_user_group[key])
            if new_name is not UNSET and new_name != name:
                check_str("new_name", new_name, nonempty=True)
                if s.scalar(sa.select(m.User.id).where(m.User.username == new_name)) is not None:
                    raise ConflictError(f"User {new_name!r} already exists")
                row.username = new_name
                self._flush_or_conflict(s, f"User {new_name!r} already exists")
            return _user_record(row)

    def set_user_password(self, name: str, password: str) -> None:
        """Store a salted hash of ``password`` ("" is the blank password)."""
        check_str("password", password)
        with self._write() as s:
            row = s.scalar(sa.select(m.User).where(m.User.username == name).with_for_update())
            if row is None:
                raise NotFoundError("user", name)
            row.password_hash = hash_password(password)

    def check_user_password(self, name: str, password: str) -> bool:
        """True iff ``name`` is an active user whose password is ``password``."""
        with self._read() as s:
            row = s.scalar(sa.select(m.User).where(m.User.username == name))
        return row is not None and row.active and verify_password(password, row.password_hash)

    # -- tokens --------------------------------------------------------------------------

    def create_trial_token(self, trial_id: int, replace: bool = False) -> str:
        """A new random bearer token for the trial's runner; only its hash is stored.
        ``replace``: the trial's earlier tokens are revoked in the same transaction (a
        new process of the trial starts: an earlier one must not report)."""
        token = secrets.token_urlsafe(32)
        if replace:
            self._forget_trial_tokens(trial_id)
        with self._write() as s:
            self._get(s, m.Trial, trial_id, "trial")
            if replace:
                s.execute(sa.delete(m.AuthToken).where(
                    m.AuthToken.trial_id == trial_id, m.AuthToken.kind == _TRIAL))
            s.add(
                m.AuthToken(
                    token_hash=_token_hash(token), kind=_TRIAL, trial_id=trial_id,
                    created_at=utcnow(),
                )
            )
        self._trial_token_cache()[_token_hash(token)] = trial_id
        return token

    def _trial_token_cache(self) -> Dict[str, int]:
        # Every trial-runner request checks its token: answer from memory. This
        # process is the only writer of trial tokens, so the cache stays exact.
        cache = getattr(self, "_trial_tokens", None)
        if cache is None:
            cache = self._trial_tokens = {}
        return cache

    def check_trial_token(self, token: str) -> Optional[int]:
        """The trial id the token was issued for, or None for an unknown token."""
        if not isinstance(token, str) or not token:
            return None
        digest = _token_hash(token)
        cached = self._trial_token_cache().get(digest)
        if cached is not None:
            return cached
        query = sa.select(m.AuthToken.trial_id).where(
            m.AuthToken.token_hash == digest, m.AuthToken.kind == _TRIAL
        )
        with self._read() as s:
            trial_id = s.scalar(query)
        if trial_id is not None:
            self._trial_token_cache()[digest] = trial_id
        return trial_id

    def _forget_trial_tokens(self, trial_id: int) -> None:
        cache = self._trial_token_cache()
        for digest, owner in list(cache.items()):  # list(): a C-level copy, safe vs. writers
            if owner == trial_id:
                cache.pop(digest, None)

    def revoke_trial_tokens(self, trial_id: int) -> int:
        """Forget every token of the trial (e.g. once it ended); returns how many."""
        self._forget_trial_tokens(trial_id)
        with self._write() as s:
            result = s.execute(
                sa.delete(m.AuthToken).where(
                    m.AuthToken.trial_id == trial_id, m.AuthToken.kind == _TRIAL
                )
            )
            return int(result.rowcount or 0)

    def create_user_token(self, name: str) -> str:
        """A new session token for user ``name`` (after a password check)."""
        token = secrets.token_urlsafe(32)
        with self._write() as s:
            user_id = s.scalar(sa.select(m.User.id).where(m.User.username == name))
            if user_id is None:
                raise NotFoundError("user", name)
            s.add(
                m.AuthToken(
                    token_hash=_token_hash(token), kind=_USER, user_id=user_id,
                    created_at=utcnow(),
                )
            )
        return token

    def check_user_token(self, token: str) -> Optional[User]:
        """The active user owning the session token, or None."""
        if not isinstance(token, str) or not token:
            return None
        query = (
            sa.select(m.User)
            .join(m.AuthToken, m.AuthToken.user_id == m.User.id)
            .where(m.AuthToken.token_hash == _token_hash(token), m.AuthToken.kind == _USER)
        )
        with self._read() as s:
            row = s.scalar(query)
            return _user_record(row) if row is not None and row.active else None

    def revoke_user_token(self, token: str) -> bool:
        """Log out: forget the session token; returns whether it existed."""
        with self._write() as s:
            result = s.execute(
                sa.delete(m.AuthToken).where(
                    m.AuthToken.token_hash == _token_hash(token), m.AuthToken.kind == _USER
                )
            )
            return bool(result.rowcount)
