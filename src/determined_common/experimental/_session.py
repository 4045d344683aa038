"""``determined_common.experimental.Session``: authenticated requests to one master."""

from typing import Any, Dict, Optional

from determined_common.api import request


class Session:
    """Requests to ``master`` as ``user`` (token from ``det user login``, else a blank-password
    login). Paths are relative to the master's ``/api/v1``.

    Example:
        >>> Session("localhost:8080", None).get("experiments").json()   # doctest: +SKIP
    """

    def __init__(self, master: Optional[str], user: Optional[str]):
        self._master = master or request.default_master()
        self._user = user

    def _headers(self) -> Dict[str, str]:
        from determined.common.api import Authenticator

        return {"Authorization": f"Bearer {Authenticator(self._master, user=self._user).token()}"}

    def get(self, path: str, params: Optional[Dict[str, Any]] = None) -> Any:
        return request.get(self._master, path, params=params, headers=self._headers(),
                           authenticated=False)

    def post(self, path: str, body: Any = None) -> Any:
        return request.post(self._master, path, body=body, headers=self._headers(),
                            authenticated=False)

    def patch(self, path: str, body: Any = None) -> Any:
        return request.patch(self._master, path, body=body, headers=self._headers(),
                             authenticated=False)

    def delete(self, path: str, params: Optional[Dict[str, Any]] = None) -> Any:
        return request.delete(self._master, path, params=params, headers=self._headers(),
                              authenticated=False)
