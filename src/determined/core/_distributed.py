"""``DistributedContext``: where this process sits among a job's processes, and
collectives of small picklable objects between them (Determined 0.38's API).

The chief (rank 0) listens on ``chief_ip:pub_port + port_offset`` (TCP); every other
rank connects to it. Each machine's local chief (``local_rank`` 0) also serves its
machine's ranks over a Unix socket (TCP on ``force_tcp``) for the ``*_local`` variants.
These are for coordination (decisions, file lists, metadata), not for tensors: use your
framework's collectives for those.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from typing import Any, List, Optional

from determined.common import scratch
from determined.core._hub import Member, Root

__all__ = ["DistributedContext", "DummyDistributedContext", "DEFAULT_PORT"]

logger = logging.getLogger("determined.core")

#: The chief's port before ``port_offset`` (upstream's first inter-process port).
DEFAULT_PORT = 12360


def _get_training_port_offset() -> int:
    """``DET_UNIQUE_PORT_OFFSET``: set per trial so that trials on one machine differ."""
    raw = os.environ.get("DET_UNIQUE_PORT_OFFSET", "0")
    try:
        return int(raw)
    except ValueError:
        raise ValueError(
            f"Expected DET_UNIQUE_PORT_OFFSET to be an integer. Received: {raw!r}") from None


_exit_hook_registered = False


#: How long a rank that ends cleanly waits at exit for the job's other ranks (seconds);
#: ``DET_EXIT_WAIT_SECONDS`` overrides it.
EXIT_WAIT_SECONDS = 60.0


def _destroy_torch_process_group_at_exit() -> None:
    """At interpreter exit, destroy torch's default process group if the script left it.

    Without ``destroy_process_group()`` (Hugging Face's ``Trainer`` and many scripts
    never call it) gloo's worker threads outlive the interpreter's finalization, and a
    rank that trained and returned may abort in C++ ("terminate called without an
    active exception", exit code 134), failing the trial. ``atexit`` runs while Python
    is still whole; a group the script destroyed itself is left alone."""
    global _exit_hook_registered
    if _exit_hook_registered:
        return
    _exit_hook_registered = True
    import atexit

    atexit.register(_destroy_torch_process_group)


def _destroy_torch_process_group() -> None:
    dist = sys.modules.get("torch.distributed")  # never imported: nothing to destroy
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return
    _wait_for_the_other_ranks(dist)
    try:
        dist.destroy_process_group()
    except Exception as e:  # exiting anyway: say why the group could not go
        logger.warning("could not destroy torch's process group at exit: %s", e)


def _wait_for_the_other_ranks(dist: Any) -> None:
    """Let the ranks tear their group down together: a rank whose peers already closed
    their connections may abort in gloo's threads at exit. The rendezvous is on the
    group's key-value store (torchrun's agent holds it), not a collective, so a peer
    busy in some other collective cannot deadlock it; it gives up after
    ``EXIT_WAIT_SECONDS`` (a rank that called ``sys.exit(1)`` while its peers train on
    waits that long before it ends). A rank that raised (``sys.last_value`` is set before ``atexit``
    runs) leaves at once: its peers fail in their next collective or are stopped by the
    launcher."""
    if getattr(sys, "last_value", None) is not None:
        return
    try:
        size = dist.get_world_size()
        if size < 2:
            return
        import datetime

        from torch.distributed import distributed_c10d

        wait = float(os.environ.get("DET_EXIT_WAIT_SECONDS", EXIT_WAIT_SECONDS))

        store = distributed_c10d._get_default_store()
        if store.add("determined/exit/arrived", 1) >= size:
            store.set("determined/exit/all", "1")
        else:
            store.wait(["determined/exit/all"], datetime.timedelta(seconds=wait))
    except Exception as e:
        text = str(e).strip().splitlines()
        logger.warning("leaving torch's process group without waiting for the other ranks: "
                       "%s", text[0] if text else type(e).__name__)


def _env_int(name: str) -> int:
    raw = os.environ.get(name)
    if raw is None:
        raise ValueError(f"Expected {name} in the environment (set by the launcher)")
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"Expected an integer in {name}. Received: {raw!r}") from None


class DistributedContext:
    """Ranks of this process and collectives across the job's processes.

    Args:
        rank, size: this process's index in the job and the number of processes.
        local_rank, local_size: the same on this machine.
        cross_rank, cross_size: this machine's index and the number of machines.
        chief_ip: the chief's address; required when ``cross_size > 1``.
        pub_port: the chief's port (before ``port_offset``).
        pull_port: accepted for compatibility (one port is enough here).
        port_offset: added to ``pub_port``.
        force_tcp: local collectives over TCP instead of a Unix socket.

    Every process of the job must construct it (it connects them) and call each
    collective in the same order.
    """

    def __init__(
        self,
        *,
        rank: int,
        size: int,
        local_rank: int,
        local_size: int,
        cross_rank: int,
        cross_size: int,
        chief_ip: Optional[str] = None,
        pub_port: int = DEFAULT_PORT,
        pull_port: int = DEFAULT_PORT + 5,
        port_offset: int = 0,
        force_tcp: bool = False,
    ) -> None:
        for name, value in (("rank", rank), ("size", size), ("local_rank", local_rank),
                            ("local_size", local_size), ("cross_rank", cross_rank),
                            ("cross_size", cross_size)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Expected DistributedContext {name} to be a non-negative "
                                 f"integer. Received: {value!r}")
        if not (rank < size and local_rank < local_size and cross_rank < cross_size):
            raise ValueError(
                "Expected rank < size, local_rank < local_size and cross_rank < cross_size. "
                f"Received: rank={rank}, size={size}, local_rank={local_rank}, "
                f"local_size={local_size}, cross_rank={cross_rank}, cross_size={cross_size}")
        self.rank, self.size = rank, size
        self.local_rank, self.local_size = local_rank, local_size
        self.cross_rank, self.cross_size = cross_rank, cross_size
        if local_size != size:
            if not chief_ip:
                raise ValueError(
                    f"DistributedContext needs chief_ip (or DET_CHIEF_IP) when the job spans "
                    f"machines (local_size {local_size} != size {size})")
            self._chief_ip = chief_ip
        else:
            self._chief_ip = "127.0.0.1"
        self._port = pub_port + port_offset
        self._root: Optional[Root] = None
        self._member: Optional[Member] = None
        self._local_root: Optional[Root] = None
        self._local_member: Optional[Member] = None
        self._tempdir: Optional[str] = None
        self._closed = False
        self._connect(force_tcp)

    # ------------------------------------------------------------------ setup

    @property
    def chief_ip(self) -> str:
        """The address ranks use to reach the chief."""
        return self._chief_ip

    def _connect(self, force_tcp: bool) -> None:
        if self.size < 2:
            return
        if self.rank == 0:
            bind = "127.0.0.1" if self.local_size == self.size else "0.0.0.0"
            self._root = Root((bind, self._port), self.size)
            self._root.accept()
        else:
            self._member = Member((self._chief_ip, self._port), self.rank)
        if self.local_size < 2:
            self.allgather(None)  # the machines with local groups announce theirs
            return
        if self.local_rank == 0:
            if force_tcp or not hasattr(os, "fork"):
                address: Any = ("127.0.0.1", 0)
            else:
                self._tempdir = scratch.make("core")
                address = os.path.join(self._tempdir, "local.sock")
            self._local_root = Root(address, self.local_size)
            self.allgather((self.cross_rank, self._local_root.address))
            self._local_root.accept()
        else:
            announced = [a for a in self.allgather(None) if a is not None and a[0] == self.cross_rank]
            if len(announced) != 1:
                raise RuntimeError(f"expected one local chief on machine {self.cross_rank}; "
                                   f"found {len(announced)}")
            self._local_member = Member(announced[0][1], self.local_rank)

    @classmethod
    def from_horovod(cls, hvd: Any, chief_ip: Optional[str] = None) -> "DistributedContext":
        """Ranks from an initialized ``horovod`` module (``hvd.init()`` called)."""
        return cls(rank=hvd.rank(), size=hvd.size(), local_rank=hvd.local_rank(),
                   local_size=hvd.local_size(), cross_rank=hvd.cross_rank(),
                   cross_size=hvd.cross_size(),
                   chief_ip=chief_ip or os.environ.get("DET_CHIEF_IP"),
                   port_offset=_get_training_port_offset())

    @classmethod
    def from_deepspeed(cls, chief_ip: Optional[str] = None) -> "DistributedContext":
        """Ranks from DeepSpeed's launcher variables (RANK, WORLD_SIZE, LOCAL_RANK,
        LOCAL_SIZE, CROSS_RANK, CROSS_SIZE)."""
        _destroy_torch_process_group_at_exit()
        return cls(rank=_env_int("RANK"), size=_env_int("WORLD_SIZE"),
                   local_rank=_env_int("LOCAL_RANK"), local_size=_env_int("LOCAL_SIZE"),
                   cross_rank=_env_int("CROSS_RANK"), cross_size=_env_int("CROSS_SIZE"),
                   chief_ip=chief_ip or os.environ.get("DET_CHIEF_IP"),
                   port_offset=_get_training_port_offset())

    @classmethod
    def from_torch_distributed(cls, chief_ip: Optional[str] = None) -> "DistributedContext":
        """Ranks from torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
        LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE); ``chief_ip`` or
        ``DET_CHIEF_IP`` is required when the job spans machines."""
        _destroy_torch_process_group_at_exit()
        return cls(rank=_env_int("RANK"), size=_env_int("WORLD_SIZE"),
                   local_rank=_env_int("LOCAL_RANK"), local_size=_env_int("LOCAL_WORLD_SIZE"),
                   cross_rank=_env_int("GROUP_RANK"), cross_size=_env_int("GROUP_WORLD_SIZE"),
                   chief_ip=chief_ip or os.environ.get("DET_CHIEF_IP"),
                   port_offset=_get_training_port_offset())

    def close(self) -> None:
        """Close the connections (every rank, after its last collective)."""
        if self._closed:
            return
        self._closed = True
        for end in (self._local_root, self._local_member, self._root, self._member):
            if end is not None:
                end.close()
        if self._tempdir is not None:
            shutil.rmtree(self._tempdir, ignore_errors=True)

    # ------------------------------------------------------------------ ranks

    def get_rank(self) -> int:
        return self.rank

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_size(self) -> int:
        return self.size

    def get_num_agents(self) -> int:
        """The number of machines (``cross_size``)."""
        return self.cross_size

    # ------------------------------------------------------------------ collectives

    def gather(self, stuff: Any) -> Optional[List]:
        """Every rank's ``stuff``, by rank, on the chief; None on the other ranks."""
        return _gather(self._root, self._member, stuff, self.size)

    def gather_local(self, stuff: Any) -> Optional[List]:
        """Every local rank's ``stuff`` on this machine's local chief; None elsewhere."""
        return _gather(self._local_root, self._local_member, stuff, self.local_size)

    def allgather(self, stuff: Any) -> List:
        """Every rank's ``stuff``, by rank, on every rank."""
        return _allgather(self._root, self._member, stuff, self.size)

    def allgather_local(self, stuff: Any) -> List:
        """Every local rank's ``stuff``, by local rank, on every rank of this machine."""
        return _allgather(self._local_root, self._local_member, stuff, self.local_size)

    def broadcast(self, stuff: Any) -> Any:
        """The chief's ``stuff`` on every rank (the others' argument is ignored)."""
        return _broadcast(self._root, self._member, stuff, self.size)

    def broadcast_local(self, stuff: Any = None) -> Any:
        """The local chief's ``stuff`` on every rank of this machine."""
        return _broadcast(self._local_root, self._local_member, stuff, self.local_size)


def _gather(root: Optional[Root], member: Optional[Member], stuff: Any,
            size: int) -> Optional[List]:
    if size < 2:
        return [stuff]
    if root is not None:
        out = [stuff, *root.recv_all()]
        root.send_all(None)  # nobody starts the next collective before all sent this one
        return out
    assert member is not None
    member.send(stuff)
    member.recv()
    return None


def _allgather(root: Optional[Root], member: Optional[Member], stuff: Any, size: int) -> List:
    if size < 2:
        return [stuff]
    if root is not None:
        out = [stuff, *root.recv_all()]
        root.send_all(out)
        return out
    assert member is not None
    member.send(stuff)
    return list(member.recv())


def _broadcast(root: Optional[Root], member: Optional[Member], stuff: Any, size: int) -> Any:
    if size < 2:
        return stuff
    if root is not None:
        root.send_all(stuff)
        return stuff
    assert member is not None
    return member.recv()


class DummyDistributedContext(DistributedContext):
    """One process: rank 0 of 1."""

    def __init__(self) -> None:
        super().__init__(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0,
                         cross_size=1)
