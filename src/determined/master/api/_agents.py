"""The agent protocol (``/api/v1/agents/{id}/...``) and the agent listing.

Remote agents (``python -m determined.agent``) authenticate with the master's
``security.agent_token`` or an admin's login session (``Authorization: Bearer
<token>``; :func:`agent_auth`). A master with neither an agent token nor
``security.allow_anonymous: false`` lets every agent that reaches it register. Routes:

- ``POST /agents/{id}/register`` ``{slots, label, running, version, protocol}`` ->
  ``{session, poll_seconds, timeout}``; ``running`` lists the launch ids the agent
  still runs (after a reconnect). An agent whose ``protocol`` (absent: 0) is not the
  master's ``AGENT_PROTOCOL`` (``GET /master`` shows it as ``agent_protocol``) gets 400
  naming both versions: an older agent's trials could not read what this master sends.
- ``GET /agents/{id}/commands?session=S&wait=W[&draining=true]`` -> ``{commands:
  [...]}``, a long poll that is also the agent's heartbeat (``draining``: it shuts
  down; no new trials). Commands: ``{type: "launch", launch_id,
  trial_id, experiment_id, slot_ids, env, spec}``, ``{type: "kill", launch_id}``,
  ``{type: "launch_task", launch_id, task_id, kind, config, env, token, slot_ids,
  context, spec}`` and ``{type: "kill_task", launch_id}``.
- ``POST /agents/{id}/events`` ``{session, logs: {launch_id: [line]}, exits:
  {launch_id: code}, started: {launch_id: {host, port}}, reasons: {launch_id: why}}``:
  output lines are stored before the exits are handled; ``started`` names tasks now
  running (and where a service listens); ``reasons`` says why the agent ended a task
  itself (it shut down).
- ``POST /agents/{id}/deregister`` ``{session}``.
- ``POST /agents/{id}/rendezvous`` ``{session, launch_id, address, port}`` -> ``{started}``:
  the agent of a spanning trial's chief part (command ``{type: "launch_part", ...,
  ranks: {first, size, num_agents, chief}}``) says where rank 0 listens; the other parts
  are then sent with ``ranks.master_addr``/``master_port`` (``resource_managers/_spanning.py``).

An unknown or replaced session gets 410: the agent registers again. Missing or wrong
credentials get 401, a session of a user who is no admin 403.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from typing import Any, Dict, List, Optional, Set, Tuple

import fastapi
import pydantic
from fastapi import Header, Query, Request

from determined._version import AGENT_PROTOCOL, __version__, agent_skew_message
from determined.master._core import Master
from determined.master.api._errors import fail
from determined.master.resource_managers import AGENT_ID, UnknownSessionError
from determined.master.views import iso

__all__ = ["agent_auth", "agents_listing", "agents_router"]

logger = logging.getLogger("determined.master")

_MAX_WAIT = 60.0
MAX_AGENT_SLOTS = 65536


class _Body(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class SlotGpu(_Body):
    index: str = pydantic.Field(max_length=32)
    uuid: str = pydantic.Field("", max_length=128)
    name: str = pydantic.Field("", max_length=255)
    memory_total: int = pydantic.Field(0, ge=0, description="bytes")


class GpuSample(_Body):
    time: float = pydantic.Field(description="seconds since the epoch")
    gpu_index: int = pydantic.Field(ge=0)
    gpu_uuid: str = pydantic.Field("", max_length=128)
    utilization: float = pydantic.Field(ge=0, le=100, description="percent")
    memory_used: int = pydantic.Field(ge=0, description="bytes")
    memory_total: int = pydantic.Field(ge=0, description="bytes")


class Register(_Body):
    slots: int = pydantic.Field(ge=0, le=MAX_AGENT_SLOTS, description="slots the agent offers")
    label: str = ""
    running: List[str] = pydantic.Field(default_factory=list,
                                        description="launch ids the agent still runs")
    version: str = ""
    protocol: int = pydantic.Field(0, ge=0, description="the agent's AGENT_PROTOCOL "
                                                        "(0: an agent from before it)")
    slot_gpus: List[SlotGpu] = pydantic.Field(
        default_factory=list, max_length=MAX_AGENT_SLOTS,
        description="the GPU of each slot (several slots may share one); [] without GPUs")

    @pydantic.model_validator(mode="after")
    def _one_gpu_per_slot(self) -> "Register":
        if self.slot_gpus and len(self.slot_gpus) != self.slots:
            raise ValueError(f"Expected slot_gpus to name the GPU of each of the {self.slots} "
                             f"slots. Received: {len(self.slot_gpus)} entries")
        return self


class Events(_Body):
    session: str
    logs: Dict[str, List[str]] = pydantic.Field(default_factory=dict)
    exits: Dict[str, int] = pydantic.Field(default_factory=dict)
    started: Dict[str, Dict[str, Any]] = pydantic.Field(
        default_factory=dict, description="tasks now running: {launch_id: {host, port}}")
    reasons: Dict[str, str] = pydantic.Field(
        default_factory=dict, description="why the agent itself ended a task: {launch_id: why}")
    gpu_metrics: Dict[str, List[GpuSample]] = pydantic.Field(
        default_factory=dict, description="readings of trials' GPUs: {launch_id: [sample]}")


class Session(_Body):
    session: str


class Rendezvous(_Body):
    session: str
    launch_id: str = pydantic.Field(max_length=64)
    address: str = pydantic.Field("", max_length=255,
                                  description="rank 0's host as the other agents reach it "
                                              "(empty: the address the master sees)")
    port: int = pydantic.Field(ge=1, le=65535)


def agent_auth(master: Master) -> Any:
    """A dependency checking an agent's credentials: the master's
    ``security.agent_token``, or the session token of an active admin. Without an agent
    token in the master config, agents need credentials only when
    ``security.allow_anonymous`` is false."""

    def check(authorization: Optional[str] = Header(None)) -> None:
        security = master.config.security
        expected = security.agent_token
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else ""
        if not expected and security.allow_anonymous:
            return
        if expected and token and hmac.compare_digest(token.encode(), expected.encode()):
            return
        if token:
            user = master.store.session_user(token)
            if user is not None and user.active:
                if not user.admin:
                    raise fail(403, f"User {user.username!r} is no admin: only an admin's "
                                    "session (or the agent token) may run an agent")
                return
        else:
            needs = ("an agent token (security.agent_token)" if expected else
                     "credentials of agents (security.allow_anonymous: false)")
            raise fail(401, f"This master requires {needs}: start the agent with --token "
                            "TOKEN or DET_AGENT_TOKEN (the agent token, or an admin's session "
                            "token)")
        raise fail(401, "Agent token rejected: it is neither the master's "
                        "security.agent_token nor an admin's valid session token")

    return check


def _agent_id(agent_id: str) -> str:
    if not agent_id or len(agent_id) > 255 or any(c.isspace() for c in agent_id) \
            or agent_id == AGENT_ID:
        raise fail(400, "Expected the agent id to be 1-255 characters without spaces and "
                        f"not {AGENT_ID!r} (the master's own agent). Received: {agent_id!r}")
    return agent_id


def agents_router(master: Master) -> fastapi.APIRouter:
    """The routes remote agents call (include with :func:`agent_auth`)."""
    api = fastapi.APIRouter(prefix="/api/v1/agents", tags=["agents"])
    remote = master.rm.remote

    def gone(e: UnknownSessionError) -> fastapi.HTTPException:
        return fail(410, str(e))

    @api.post("/{agent_id}/register")
    def register(agent_id: str, body: Register, request: Request) -> Dict[str, Any]:
        _agent_id(agent_id)
        if body.protocol != AGENT_PROTOCOL:
            why = agent_skew_message(agent_id, body.version, body.protocol, __version__,
                                     AGENT_PROTOCOL)
            logger.warning("refused agent %s: %s", agent_id, why)
            raise fail(400, why)
        master.store.upsert_agent(agent_id, body.slots, label=body.label)
        address = request.client.host if request.client is not None else ""
        answer = remote.register(agent_id, body.slots, body.label, body.running, address,
                                 [g.model_dump() for g in body.slot_gpus])
        logger.info("agent %s registered from %s with %d slot(s)", agent_id, address,
                    body.slots)
        return answer

    wakeups = _AgentWakeups()
    remote.listeners.append(wakeups.notify)

    @api.get("/{agent_id}/commands")
    async def commands(agent_id: str, session: str = Query(...),
                       wait: float = Query(10.0, ge=0, le=_MAX_WAIT),
                       draining: bool = Query(False)) -> Dict[str, Any]:
        # Async, so a waiting agent holds no worker thread (there are only 40).
        deadline = time.monotonic() + remote.poll_wait(wait)
        try:
            if draining:
                remote.drain(agent_id, session)
            while True:
                woken = wakeups.arm(agent_id)  # before looking: no wake-up is missed
                try:
                    found = remote.take(agent_id, session,
                                        force=time.monotonic() >= deadline)
                except UnknownSessionError:
                    wakeups.disarm(agent_id, woken)
                    raise
                if found is not None:
                    wakeups.disarm(agent_id, woken)
                    return {"commands": found}
                await wakeups.wait(agent_id, woken, deadline - time.monotonic())
        except UnknownSessionError as e:
            raise gone(e) from None

    @api.post("/{agent_id}/events")
    def events(agent_id: str, body: Events) -> Dict[str, Any]:
        try:
            remote.report(agent_id, body.session, body.logs, body.exits, body.started,
                          body.reasons, {lid: [s.model_dump() for s in batch]
                                         for lid, batch in body.gpu_metrics.items()})
        except UnknownSessionError as e:
            raise gone(e) from None
        return {}

    @api.post("/{agent_id}/deregister")
    def deregister(agent_id: str, body: Session) -> Dict[str, Any]:
        try:
            remote.deregister(agent_id, body.session)
        except UnknownSessionError as e:
            raise gone(e) from None
        logger.info("agent %s deregistered", agent_id)
        return {}

    @api.post("/{agent_id}/rendezvous")
    def rendezvous(agent_id: str, body: Rendezvous) -> Dict[str, Any]:
        try:
            started = remote.rendezvous(agent_id, body.session, body.launch_id,
                                        body.address, body.port)
        except UnknownSessionError as e:
            raise gone(e) from None
        return {"started": started}

    return api


class _AgentWakeups:
    """Async polls per agent, woken from any thread by the registry's listeners."""

    def __init__(self) -> None:
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._futures: Dict[str, Set["asyncio.Future[None]"]] = {}

    def arm(self, agent_id: str) -> "asyncio.Future[None]":
        self._loop = asyncio.get_running_loop()
        future = self._loop.create_future()
        self._futures.setdefault(agent_id, set()).add(future)
        return future

    def disarm(self, agent_id: str, future: "asyncio.Future[None]") -> None:
        waiting = self._futures.get(agent_id)
        if waiting is not None:
            waiting.discard(future)
            if not waiting:
                del self._futures[agent_id]

    async def wait(self, agent_id: str, future: "asyncio.Future[None]",
                   timeout: float) -> None:
        try:
            await asyncio.wait_for(future, max(0.0, timeout))
        except asyncio.TimeoutError:
            pass
        finally:
            self.disarm(agent_id, future)

    def notify(self, agent_id: str) -> None:
        loop = self._loop
        if loop is not None:
            try:
                loop.call_soon_threadsafe(self._release, agent_id)
            except RuntimeError:  # the loop has closed: the master is stopping
                pass

    def _release(self, agent_id: str) -> None:
        for future in self._futures.pop(agent_id, set()):
            if not future.done():
                future.set_result(None)


def agents_listing(master: Master) -> Dict[str, Any]:
    """``GET /agents``: live agents, their slots and the task on each slot."""
    busy: Dict[Tuple[str, int], str] = {}
    for task_id, alloc in master.slot_holders():
        for agent_id, slots in alloc.parts:
            for slot in slots:
                busy[(agent_id, slot)] = task_id
    records = {a.id: a for a in master.store.list_agents()}
    remote = {d["id"]: d for d in master.rm.remote.describe()}
    if getattr(master.rm, "ray", None) is not None:  # Ray nodes (type "ray")
        remote.update({d["id"]: d for d in master.rm.ray.describe()})
    embedded = master.rm.embedded
    own_gpus = [g.to_json() for g in embedded.gpus] if embedded is not None else []
    out = []
    for a in master.rm.agents():
        rec = records.get(a.id)
        info = remote.get(a.id, {})
        gpus = own_gpus if a.id == AGENT_ID else info.get("slot_gpus") or []
        out.append({
            "id": a.id, "slots": a.slots, "label": a.label,
            "enabled": rec.enabled if rec is not None else True,
            "type": remote[a.id].get("type", "remote") if a.id in remote else "embedded",
            "address": info.get("address", ""),
            "registered_at": iso(rec.registered_at) if rec is not None else None,
            "last_seen_seconds_ago": info.get("last_seen_seconds_ago", 0.0),
            "used_slots": sum(1 for agent_id, _ in busy if agent_id == a.id),
            "gpus": _distinct_gpus(gpus),
            "slot_tasks": [{"slot_id": i, "task": busy.get((a.id, i)),
                            "enabled": i not in a.disabled_slots,
                            "gpu": gpus[i] if i < len(gpus) else None}
                           for i in range(a.slots)],
        })
    return {"agents": out}


def _distinct_gpus(slot_gpus: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """An agent's GPUs (each once) with how many of its slots share each."""
    out: Dict[str, Dict[str, Any]] = {}
    for gpu in slot_gpus:
        entry = out.setdefault(str(gpu["index"]), dict(gpu, slots=0))
        entry["slots"] += 1
    return list(out.values())
