"""Small-object collectives between the processes of one group, over
``multiprocessing.connection`` (pickled objects, HMAC-authenticated).

The group's root (index 0) listens; every other member connects and says its index.
Each collective is one message per member each way, in the same order on every
member, so one duplex connection per member suffices.
"""

from __future__ import annotations

import logging
import os
import time
from multiprocessing.connection import Client, Connection, Listener
from typing import Any, Dict, List, Optional, Tuple, Union

__all__ = ["Root", "Member", "CollectiveError", "authkey", "timeout_seconds"]

logger = logging.getLogger("determined.core")

Address = Union[str, Tuple[str, int]]

_DEFAULT_AUTHKEY = b"determined-core-distributed"


class CollectiveError(RuntimeError):
    """Another process of the group died, hung or could not be reached."""


def authkey() -> bytes:
    """The group's key: ``DET_DIST_AUTHKEY`` (hex) when a launcher set one."""
    raw = os.environ.get("DET_DIST_AUTHKEY")
    if not raw:
        return _DEFAULT_AUTHKEY
    try:
        return bytes.fromhex(raw)
    except ValueError:
        raise ValueError(f"Expected DET_DIST_AUTHKEY to be hex. Received: {raw!r}") from None


def timeout_seconds() -> float:
    """How long members wait to reach the root (``DET_DIST_TIMEOUT``, default 600 s)."""
    raw = os.environ.get("DET_DIST_TIMEOUT", "600")
    try:
        return float(raw)
    except ValueError:
        raise ValueError(
            f"Expected DET_DIST_TIMEOUT to be a number of seconds. Received: {raw!r}") from None


class Root:
    """Index 0 of a group of ``size``: accepts the other ``size - 1`` members."""

    def __init__(self, address: Address, size: int):
        self.size = size
        family = "AF_UNIX" if isinstance(address, str) else "AF_INET"
        self._listener = Listener(address, family=family, authkey=authkey())
        self.address: Address = self._listener.address
        self._conns: Dict[int, Connection] = {}

    def accept(self) -> None:
        """Block until every member connected."""
        while len(self._conns) < self.size - 1:
            conn = self._listener.accept()
            index = conn.recv()
            if not isinstance(index, int) or not 0 < index < self.size or index in self._conns:
                conn.close()
                raise CollectiveError(f"a process joined with an unexpected index {index!r} "
                                      f"(group of {self.size})")
            self._conns[index] = conn
        self._listener.close()

    def send_all(self, obj: Any) -> None:
        for index in sorted(self._conns):
            try:
                self._conns[index].send(obj)
            except OSError as e:
                raise CollectiveError(f"process {index} of the group is gone: {e}") from None

    def recv_all(self) -> List[Any]:
        """One object from every member, by index (1..size-1)."""
        out = []
        for index in sorted(self._conns):
            try:
                out.append(self._conns[index].recv())
            except (EOFError, OSError) as e:
                raise CollectiveError(f"process {index} of the group is gone: {e!r}") from None
        return out

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()


class Member:
    """Index ``index`` > 0 of a group: connects to the root at ``address``."""

    def __init__(self, address: Address, index: int, timeout: Optional[float] = None):
        deadline = time.monotonic() + (timeout_seconds() if timeout is None else timeout)
        family = "AF_UNIX" if isinstance(address, str) else "AF_INET"
        while True:
            try:
                self._conn = Client(address, family=family, authkey=authkey())
                break
            except (ConnectionRefusedError, FileNotFoundError) as e:
                if time.monotonic() > deadline:
                    raise CollectiveError(
                        f"cannot reach the chief process at {address!r}: {e}") from None
                time.sleep(0.05)
        self._conn.send(index)

    def send(self, obj: Any) -> None:
        try:
            self._conn.send(obj)
        except OSError as e:
            raise CollectiveError(f"the chief process is gone: {e}") from None

    def recv(self) -> Any:
        try:
            return self._conn.recv()
        except (EOFError, OSError) as e:
            raise CollectiveError(f"the chief process is gone: {e!r}") from None

    def close(self) -> None:
        self._conn.close()
