"""Users, login sessions and ownership on the REST API (SPEC 6.1, 6.4 ``det user``).

Every ``/api/v1`` route except ``POST /auth/login``, ``GET /master`` and the trial-runner
routes (which keep their per-trial tokens) runs :meth:`Auth.resolve` first:

- ``Authorization: Bearer <token>`` of a login session -> that user; an unknown or
  expired token -> 401.
- a trial runner's token is no login: it authorizes only its own trial's runner routes
  (checked there) and ``GET /experiments/{its experiment}/model_def`` (how an agent
  fetches the code it runs); anywhere else it gets 403.
- no token -> user ``determined`` if the master config has ``security.allow_anonymous``
  (the default, as upstream's blank-password default user), else 401.
- a deactivated user -> 403 (so clients do not try to log in again), also at login.
- with ``security.allow_anonymous: false``, an admin never logs in with a blank password
  (401 saying how to set one): the seeded ``admin`` has one, and an admin session could
  register agents and change users.

Routes: ``POST /auth/login`` {username, password} -> {token, user};
``POST /auth/logout``; ``GET /me``; ``GET /users``; ``GET /users/{name}``;
``POST /users`` (admin); ``PATCH /users/{name}`` {active, admin, username,
agent_user_group} (admin);
``POST /users/{name}/password`` {password} (the user or an admin; ``?dry_run=true``: its
checks alone, no body).
Experiments may be paused, killed or edited only by their owner or an admin
(:func:`check_owner`, 403 otherwise).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional

import fastapi
import pydantic
from fastapi import Depends, Header, Request
from starlette.concurrency import run_in_threadpool

from determined.master._core import Master
from determined.master.api._errors import fail
from determined.master.db import ConflictError, NotFoundError, User
from determined.master.db._users import AuthenticationError

__all__ = ["ANONYMOUS_USER", "Auth", "blank_password_hint", "check_owner", "require_admin",
           "user_json"]

#: The user a request without a token acts as, when the master allows it.
ANONYMOUS_USER = "determined"

_PUBLIC = ("/api/v1/auth/login", "/api/v1/master")
_RUNNER_PREFIX = "/api/v1/trial-runner/"
_MODEL_DEF = re.compile(r"/api/v1/experiments/(\d+)/model_def")


def blank_password_hint(username: str) -> str:
    """Why a blank password cannot log in with anonymous access off, and the fix."""
    return (f"Admins cannot log in with a blank password while security.allow_anonymous is "
            f"false; set one with `python -m determined.master --config FILE "
            f"--set-password {username}`")


def user_json(u: User) -> Dict[str, Any]:
    return {"id": u.id, "username": u.username, "admin": u.admin, "active": u.active,
            "agent_user_group": u.agent_user_group}


def check_owner(user: User, owner: str, what: str, action: str) -> None:
    """403 unless ``user`` is ``owner`` or an admin.

    Example: ``check_owner(user, exp.owner, f"experiment {id}", "pause")``.
    """
    if user.admin or user.username == owner:
        return
    raise fail(403, f"User {user.username!r} may not {action} {what}: it belongs to "
                    f"{owner!r}; only its owner or an admin can")


def require_admin(user: User, action: str) -> None:
    """403 unless ``user`` is an admin. Example: ``require_admin(user, "create users")``."""
    if not user.admin:
        raise fail(403, f"Only an admin can {action}; {user.username!r} is not one")


def _bearer(authorization: Optional[str]) -> Optional[str]:
    if authorization is None:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise fail(401, "Expected the header 'Authorization: Bearer <token>'. Received: "
                        f"Authorization: {scheme} ...")
    return token.strip()


def _username(name: str, field: str = "username") -> str:
    if not name or len(name) > 255 or any(c.isspace() for c in name) or "/" in name:
        raise fail(400, f"Expected {field} to be 1-255 characters without spaces or '/'. "
                        f"Received: {field}={name!r}")
    return name


class _Body(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class Login(_Body):
    username: str
    password: str = ""


class CreateUser(_Body):
    username: str
    admin: bool = False
    active: bool = True
    password: str = ""


class AgentUserGroup(_Body):
    """The POSIX user and group a user's tasks would run as on agents (recorded: trials
    and tasks here run as the agent's own user)."""

    agent_uid: int = pydantic.Field(ge=0, le=2**31 - 1)
    agent_gid: int = pydantic.Field(ge=0, le=2**31 - 1)
    agent_user: str = pydantic.Field(min_length=1, max_length=255)
    agent_group: str = pydantic.Field(min_length=1, max_length=255)


class PatchUser(_Body):
    username: Optional[str] = pydantic.Field(default=None, description="a new name")
    admin: Optional[bool] = None
    active: Optional[bool] = None
    agent_user_group: Optional[AgentUserGroup] = None


class Password(_Body):
    password: str


class Auth:
    """Authentication for ``master``'s REST API.

    Use ``Depends(auth.resolve)`` on a router and ``user: User = Depends(auth.caller)``
    on routes that need the caller (FastAPI runs the shared dependency once per request).
    """

    def __init__(self, master: Master):
        self.master = master
        resolve = self.resolve

        def caller(resolved: Optional[User] = Depends(resolve)) -> User:
            if resolved is None:
                raise fail(401, "This route needs a logged-in user")
            return resolved

        #: A dependency giving the calling :class:`User` (runs :meth:`resolve` once).
        self.caller = caller

    @property
    def _security(self) -> Any:
        return self.master.config.security

    async def resolve(self, request: Request,
                      authorization: Optional[str] = Header(None)) -> Optional[User]:
        """The calling user, or None on routes needing none; raises 401.

        Async so that the trial runners' high-rate reports skip a thread hop; user
        lookups (database reads) run in the thread pool."""
        path = request.url.path
        if path in _PUBLIC or path.startswith(_RUNNER_PREFIX):
            return None
        return await run_in_threadpool(self._resolve_user, request, authorization)

    def _resolve_user(self, request: Request, authorization: Optional[str]) -> Optional[User]:
        store = self.master.store
        token = _bearer(authorization)
        if token is not None:
            user = store.session_user(token)
            if user is None and self._trial_scope(request, token):
                return None
            if user is None:
                raise fail(401, "Invalid or expired session token: log in again "
                                "(`det user login`)")
        elif self._security.allow_anonymous:
            try:
                user = store.get_user(ANONYMOUS_USER)
            except NotFoundError:
                raise fail(401, f"Requests without a token act as user {ANONYMOUS_USER!r}, "
                                "which no longer exists (renamed?): log in") from None
        else:
            raise fail(401, "Authentication required: log in (`det user login`, or POST "
                            "/api/v1/auth/login) and send 'Authorization: Bearer <token>'")
        if not user.active:  # 403, not 401: logging in again would not help
            raise fail(403, f"User {user.username!r} is deactivated; an admin can run "
                            f"`det user activate {user.username}`")
        return user

    def _trial_scope(self, request: Request, token: str) -> bool:
        """True if ``token`` is a trial's and may make this request; 403 if it is a
        trial's and may not; False if it is no trial's token."""
        trial_id = self.master.store.check_trial_token(token)
        if trial_id is None:
            return False
        found = _MODEL_DEF.fullmatch(request.url.path)
        if request.method == "GET" and found is not None:
            if self.master.store.get_trial(trial_id).experiment_id == int(found.group(1)):
                return True
        raise fail(403, f"A trial token authorizes only trial {trial_id}'s runner routes, "
                        f"not {request.method} {request.url.path}: log in as a user")

    def router(self) -> fastapi.APIRouter:
        """The ``/auth``, ``/me`` and ``/users`` routes."""
        api = fastapi.APIRouter(prefix="/api/v1", tags=["users"])
        store = self.master.store
        Caller = Depends(self.caller)

        @api.post("/auth/login")
        def login(body: Login) -> Dict[str, Any]:
            if body.password == "" and not self._security.allow_anonymous:
                try:
                    blank_admin = store.get_user(body.username).admin
                except NotFoundError:
                    blank_admin = False  # the login fails as for any unknown user
                if blank_admin:
                    raise fail(401, blank_password_hint(body.username))
            ttl = self._security.session_ttl_hours * 3600.0
            try:
                token, user = store.login(body.username, body.password, ttl=ttl)
            except AuthenticationError as e:
                raise fail(403 if e.deactivated else 401, str(e)) from None
            return {"token": token, "user": user_json(user)}

        @api.post("/auth/logout")
        def logout(user: User = Caller,
                   authorization: Optional[str] = Header(None)) -> Dict[str, Any]:
            token = _bearer(authorization)
            if token is None:
                raise fail(400, "Logging out needs the session's 'Authorization: Bearer "
                                "<token>' header")
            return {"logged_out": store.logout(token)}

        @api.get("/me")
        def me(user: User = Caller) -> Dict[str, Any]:
            return user_json(user)

        @api.get("/users")
        def list_users(user: User = Caller) -> Dict[str, Any]:
            return {"users": [user_json(u) for u in store.list_users()]}

        @api.get("/users/{username}")
        def get_user(username: str, user: User = Caller) -> Dict[str, Any]:
            return user_json(store.get_user(username))

        @api.post("/users", status_code=201)
        def create_user(body: CreateUser, user: User = Caller) -> Dict[str, Any]:
            require_admin(user, "create users")
            try:
                created = store.create_user(_username(body.username), admin=body.admin,
                                            password=body.password)
            except ConflictError as e:
                raise fail(409, str(e)) from None
            if not body.active:
                created = store.update_user(created.username, active=False)
            return user_json(created)

        @api.patch("/users/{username}")
        def patch_user(username: str, body: PatchUser, user: User = Caller) -> Dict[str, Any]:
            changes = body.model_dump(exclude_none=True)
            if not changes:
                raise fail(400, "Expected at least one of username, admin, active, "
                                "agent_user_group. Received: an empty change")
            require_admin(user, "change users (" + ", ".join(sorted(changes)) + ")")
            store.get_user(username)  # 404 first
            if "username" in changes:
                changes["new_name"] = _username(changes.pop("username"))
            if changes.get("active") is False and username == user.username:
                raise fail(400, f"Admin {username!r} cannot deactivate itself")
            try:
                updated = store.update_user(username, **changes)
            except ConflictError as e:
                raise fail(409, str(e)) from None
            return user_json(updated)

        @api.post("/users/{username}/password")
        def set_password(username: str, body: Optional[Password] = None, dry_run: bool = False,
                         user: User = Caller) -> Dict[str, Any]:
            if username != user.username:
                require_admin(user, f"change the password of {username!r}")
            store.get_user(username)
            if dry_run:  # the checks alone: `det user change-password` asks only then
                return {}
            if body is None:
                raise fail(400, "Expected a JSON body {\"password\": ...}. Received: none")
            store.set_user_password(username, body.password)
            return {}

        return api
