"""Log in to a master and cache session tokens in ``auth.json``.

The cache lives in ``$DET_AUTH_DIR`` (default ``~/.determined``)::

    {"version": 1,
     "masters": {"http://host:8080": {"active_user": "alice",
                                      "tokens": {"alice": "...", "determined": "..."}}}}

As upstream Determined, a client with no cached token logs in by itself as user
``determined`` (or the ``-u`` user) with the blank password, and asks for a password
(``getpass``) only when that fails on an interactive terminal.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import tempfile
from typing import Any, Dict, Iterator, Optional

from determined.common.api._client import APIError, MasterClient, normalize_master_url
from determined.common.password import ask_password
from determined.errors import MasterError

__all__ = ["AUTH_DIR_ENV", "DEFAULT_USER", "Authenticator", "TokenCache", "auth_dir"]

#: Environment variable naming the directory of ``auth.json``.
AUTH_DIR_ENV = "DET_AUTH_DIR"
#: The user a client logs in as when none is named or cached.
DEFAULT_USER = "determined"


def auth_dir() -> str:
    """``$DET_AUTH_DIR``, else ``~/.determined``."""
    return os.environ.get(AUTH_DIR_ENV) or os.path.join(os.path.expanduser("~"), ".determined")


class TokenCache:
    """Session tokens per master and user, in ``auth.json`` (mode 0600).

    Writes are atomic (temporary file + rename) under a file lock, so concurrent ``det``
    processes do not lose each other's logins.
    """

    def __init__(self, directory: Optional[str] = None):
        self.dir = directory or auth_dir()
        self.path = os.path.join(self.dir, "auth.json")

    def _load(self) -> Dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return {"version": 1, "masters": {}}
        except (OSError, ValueError) as e:
            raise MasterError(f"Cannot read the login cache {self.path}: {e}. Delete it and "
                              "log in again (`det user login`)") from None
        if not isinstance(data, dict) or not isinstance(data.get("masters"), dict):
            raise MasterError(f"The login cache {self.path} is not in the expected format "
                              '{"version": 1, "masters": {...}}. Delete it and log in again')
        return data

    @contextlib.contextmanager
    def _editing(self) -> Iterator[Dict[str, Any]]:
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        with open(self.path + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self._load()
            yield data
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".auth-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(data, f, indent=2, sort_keys=True)
                os.chmod(tmp, 0o600)
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise

    def _master(self, data: Dict[str, Any], master: str) -> Dict[str, Any]:
        entry = data["masters"].setdefault(master, {})
        entry.setdefault("tokens", {})
        return entry

    def active_user(self, master: str) -> Optional[str]:
        """The user last logged in to ``master``, if any."""
        return self._load()["masters"].get(master, {}).get("active_user")

    def get(self, master: str, user: str) -> Optional[str]:
        return self._load()["masters"].get(master, {}).get("tokens", {}).get(user)

    def put(self, master: str, user: str, token: str, activate: bool = True) -> None:
        with self._editing() as data:
            entry = self._master(data, master)
            entry["tokens"][user] = token
            if activate:
                entry["active_user"] = user

    def drop(self, master: str, user: str) -> Optional[str]:
        """Forget ``user``'s token (and make no user active if it was); returns it."""
        with self._editing() as data:
            entry = self._master(data, master)
            token = entry["tokens"].pop(user, None)
            if entry.get("active_user") == user:
                entry.pop("active_user")
            return token

    def rename(self, master: str, old: str, new: str) -> None:
        """Follow a user rename (the session itself stays valid)."""
        with self._editing() as data:
            entry = self._master(data, master)
            if old in entry["tokens"]:
                entry["tokens"][new] = entry["tokens"].pop(old)
            if entry.get("active_user") == old:
                entry["active_user"] = new


class Authenticator:
    """Supplies a session token for one user of one master, logging in when needed.

    Args:
        master: ``host:port`` or a URL.
        user: the user; default: the master's active user in the cache, else
            ``determined``.
        password: used when a login is needed; None tries the blank password, then
            prompts on an interactive terminal.
        cache: where tokens are kept (default: :class:`TokenCache` in :func:`auth_dir`).
        activate: whether a login makes ``user`` the master's active user (the default
            of later commands); default: only when no ``user`` was named, so
            ``det -u NAME ...`` acts as NAME for that command only.

    Example:
        >>> auth = Authenticator("localhost:8080", user="alice")     # doctest: +SKIP
        >>> MasterClient("localhost:8080", auth=auth).me()["username"]   # doctest: +SKIP
        'alice'
    """

    def __init__(self, master: str, user: Optional[str] = None, password: Optional[str] = None,
                 cache: Optional[TokenCache] = None, activate: Optional[bool] = None):
        self.master = normalize_master_url(master)
        self.cache = cache or TokenCache()
        self.username = user or self.cache.active_user(self.master) or DEFAULT_USER
        self.password = password
        self.activate = user is None if activate is None else activate

    def token(self, refresh: bool = False) -> str:
        """The cached token, or a new one from a login (``refresh`` forces a login)."""
        cached = self.cache.get(self.master, self.username)
        if cached and not refresh:
            return cached
        return self.login(session_ended=bool(cached))

    def login(self, password: Optional[str] = None, session_ended: bool = False) -> str:
        """Log in (``password``, else the constructor's, else blank-then-prompt) and cache.
        ``session_ended``: the master refused the cached token (the error says so).

        Raises:
            MasterError: the master refused the login or is unreachable.
            PromptCanceled: Ctrl-D or Ctrl-C at the password prompt (nothing sent).
        """
        password = password if password is not None else self.password
        with MasterClient(self.master) as c:
            try:
                answer = c.login(self.username, password or "")
            except APIError as e:
                if e.status != 401:
                    raise
                if password is None and sys.stdin is not None and sys.stdin.isatty():
                    prompt = f"Password for user {self.username!r}: "
                    typed = ask_password(prompt, "login")  # Ctrl-D/Ctrl-C: PromptCanceled
                    try:
                        answer = c.login(self.username, typed)
                    except APIError as again:
                        if again.status != 401:
                            raise
                        raise self._refused(again) from None
                elif password is not None:  # a password given and refused: say what to check
                    raise self._refused(e) from None
                elif session_ended:  # e.g. past the master's session_ttl_hours
                    raise APIError(
                        f"The saved login of {self.username!r} at {self.master} is no longer "
                        f"valid (the session expired or was ended). Log in again with "
                        f"`det -m {self.master} user login {self.username}`", e.status,
                    ) from None
                else:  # another command, without a terminal to ask for the password
                    raise APIError(
                        f"Could not log in to {self.master} as {self.username!r} with the "
                        f"blank password: {e}. Log in first with `det -m {self.master} user "
                        f"login {self.username}` (it asks for the password)", e.status,
                    ) from None
        token = str(answer["token"])
        self.cache.put(self.master, self.username, token, activate=self.activate)
        return token

    def _refused(self, e: APIError) -> APIError:
        """A password refused: which login, and what to check."""
        return APIError(
            f"Could not log in to {self.master} as {self.username!r}: {e}. Check the user "
            f"name (`det user list` lists users) and the password (an admin can set it: "
            f"`det user change-password {self.username}`)", e.status)

    def forget(self) -> Optional[str]:
        """Drop the cached token of this user; returns it (None if there was none)."""
        return self.cache.drop(self.master, self.username)
