"""The ports a trial's chief listens on when its ranks span machines, all derived from
one per-trial offset (``DET_UNIQUE_PORT_OFFSET``, upstream's name): torchrun's
rendezvous (:data:`C10D_PORT` + offset) and the Core API's
:class:`~determined.core.DistributedContext` (its ``DEFAULT_PORT`` + offset).

The chief's agent picks an offset whose ports are free (:func:`free_port_offset`) and
passes the rendezvous port on to the other machines, which recover the offset from it
(:func:`offset_of`).
"""

from __future__ import annotations

import random
import socket
from typing import List

__all__ = ["C10D_PORT", "chief_ports", "free_port_offset", "offset_of", "rendezvous_port"]

#: Upstream's torchrun rendezvous port, before the trial's offset.
C10D_PORT = 29400
#: Offsets tried: every port stays below the usual ephemeral range (32768 and up), so a
#: port picked here is not taken meanwhile by an outgoing connection.
_MAX_OFFSET = 3000


def chief_ports(offset: int) -> List[int]:
    """Every port the chief binds for ``offset``."""
    from determined.core._distributed import DEFAULT_PORT  # not at import: agents load this

    return [DEFAULT_PORT + offset, C10D_PORT + offset]


def rendezvous_port(offset: int) -> int:
    return C10D_PORT + offset


def offset_of(port: int) -> int:
    """The offset whose rendezvous port is ``port``."""
    if not C10D_PORT <= port <= C10D_PORT + _MAX_OFFSET:
        raise ValueError(f"Expected a rendezvous port in {C10D_PORT}..{C10D_PORT + _MAX_OFFSET}. "
                         f"Received: {port}")
    return port - C10D_PORT


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def free_port_offset(attempts: int = 200) -> int:
    """An offset whose :func:`chief_ports` are all free on every interface now."""
    for _ in range(attempts):
        offset = random.randint(1, _MAX_OFFSET)
        if all(_free(p) for p in chief_ports(offset)):
            return offset
    raise RuntimeError(f"no free port offset for the trial's chief after {attempts} tries")
