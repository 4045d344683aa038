"""Where the ranks of a trial spanning agents meet: a free port on rank 0's agent, and the
network interface collective libraries use to reach the other agents (the agent's own
address: ``Agent.address``)."""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct
from typing import Dict, Optional

__all__ = ["interface_env"]

_SIOCGIFADDR = 0x8915


def _interface_of(address: str) -> Optional[str]:
    try:
        wanted = ipaddress.ip_address(address)
    except ValueError:
        return None
    if wanted.version != 4:
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                raw = fcntl.ioctl(s.fileno(), _SIOCGIFADDR,
                                  struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
            if socket.inet_ntoa(raw[20:24]) == str(wanted):
                return name
    return None


def interface_env(address: str, environ: Dict[str, str]) -> Dict[str, str]:
    """``GLOO_SOCKET_IFNAME``/``NCCL_SOCKET_IFNAME`` naming the interface that holds
    ``address`` (gloo otherwise picks the host name's address, often a loopback one),
    unless the agent's environment sets them."""
    name = _interface_of(address) if address else None
    if name is None:
        return {}
    return {k: name for k in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME") if k not in environ}
