"""Where the ranks of a trial spanning agents meet: this agent's address and a free port,
and the network interface collective libraries should use to reach the other agents."""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct
from typing import Dict, Optional
from urllib.parse import urlparse

__all__ = ["route_address", "free_port", "interface_env"]

_SIOCGIFADDR = 0x8915


def route_address(master_url: str) -> str:
    """The local address this machine uses to reach the master ("" if unknown): the
    other agents reach rank 0 there when they reach the master the same way."""
    parsed = urlparse(master_url)
    host, port = parsed.hostname or "", parsed.port or 80
    try:
        family, _, _, _, target = socket.getaddrinfo(host, port, proto=socket.IPPROTO_UDP)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect(target)  # UDP: no packet is sent
            return str(s.getsockname()[0])
    except OSError:
        return ""


def free_port() -> int:
    """A TCP port free on every interface now (rank 0 binds it moments later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


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
