"""The agent wire schema: what a master sends its remote agents and what they send it, as
the real code builds and parses it, and which of its changes older agents survive.

:func:`capture` registers as an agent with a running master over HTTP, creates an
experiment and takes the ``launch`` command the master queues for it (the master's own
payload), reads the request bodies of the agent routes from the master's OpenAPI
document (its pydantic models) and the types of the trial's ``env`` from
:class:`~determined.harness._env.TrialEnv` (what the agent's harness builds from it).
:func:`breaking_changes` compares two captures section by section, by how the agent or
the master parses each:

- ``launch_command``, ``trial_spec``: the agent and its harness read keys by name
  (``command["spec"]``, ``spec.get("threads")``): a new key is ignored by older agents;
  a removed or retyped key breaks them.
- ``trial_env``: ``TrialEnv.from_dict`` passes the dict as ``**kwargs`` to the
  dataclass, so *any* new key fails an older agent's trials (``unexpected keyword
  argument``), and a removed one fails them when it was required: every change breaks.
- ``register_body``, ``events_body``: the master's models forbid unknown fields, so a
  field older agents still send cannot go; a new field must be optional (older agents
  omit it); ``commands_query``: a new query parameter must be optional likewise.

Run ``python tests/agent/agent_wire_schema.py`` to print the current schema (it starts a
master), ``--write`` to record it in ``agent_protocol_schema.json`` under the current
``AGENT_PROTOCOL``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import pathlib
import sys
import tempfile
import time
from typing import Any, Dict, List

import httpx

HERE = pathlib.Path(__file__).resolve().parent
SCHEMA_FILE = HERE / "agent_protocol_schema.json"
PRINT_COMMAND = "python tests/agent/agent_wire_schema.py"
WRITE_COMMAND = "python tests/agent/agent_wire_schema.py --write"

#: Sections whose new keys older agents ignore (they read keys by name).
LENIENT_SECTIONS = ("launch_command", "trial_spec")
#: Sections every change of which breaks older agents.
STRICT_SECTIONS = ("trial_env",)
#: Request bodies and parameters the master validates: new entries must be optional.
REQUEST_SECTIONS = ("register_body", "events_body", "commands_query")

AGENT_ID = "wire-schema"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _openapi_type(prop: Dict[str, Any], components: Dict[str, Any]) -> str:
    """A readable type of an OpenAPI property (models inlined as ``{field: type}``)."""
    if "$ref" in prop:
        return _model_type(components[prop["$ref"].rsplit("/", 1)[-1]], components)
    if "anyOf" in prop:
        return " | ".join(_openapi_type(p, components) for p in prop["anyOf"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"array<{_openapi_type(prop.get('items') or {}, components)}>"
    if kind == "object" and "additionalProperties" in prop:
        extra = prop["additionalProperties"]
        inner = _openapi_type(extra, components) if isinstance(extra, dict) else "any"
        return f"map<{inner}>"
    return str(kind)


def _model_type(model: Dict[str, Any], components: Dict[str, Any]) -> str:
    fields = _model_fields(model, components)
    return "{" + ", ".join(f"{k}{'' if f['required'] else '?'}: {f['type']}"
                           for k, f in sorted(fields.items())) + "}"


def _model_fields(model: Dict[str, Any], components: Dict[str, Any]) -> Dict[str, Any]:
    required = set(model.get("required") or [])
    return {name: {"type": _openapi_type(prop, components), "required": name in required}
            for name, prop in sorted((model.get("properties") or {}).items())}


def _request_sections(openapi: Dict[str, Any]) -> Dict[str, Any]:
    components = openapi["components"]["schemas"]
    paths = openapi["paths"]

    def body(path: str) -> Dict[str, Any]:
        content = paths[path]["post"]["requestBody"]["content"]["application/json"]
        ref = content["schema"]["$ref"].rsplit("/", 1)[-1]
        return _model_fields(components[ref], components)

    query = {p["name"]: {"type": _openapi_type(p.get("schema") or {}, components),
                         "required": bool(p.get("required"))}
             for p in paths["/api/v1/agents/{agent_id}/commands"]["get"]["parameters"]
             if p["in"] == "query"}
    return {"register_body": body("/api/v1/agents/{agent_id}/register"),
            "events_body": body("/api/v1/agents/{agent_id}/events"),
            "commands_query": dict(sorted(query.items()))}


def _trial_env_types(env: Dict[str, Any]) -> Dict[str, str]:
    """The keys the master sent, typed as the agent's TrialEnv declares them."""
    from determined.harness._env import TrialEnv

    declared = {f.name: str(f.type) for f in dataclasses.fields(TrialEnv)}
    unknown = sorted(set(env) - set(declared))
    if unknown:
        raise AssertionError(f"the master sends trial env keys {unknown} that TrialEnv "
                             f"(determined/harness/_env.py) does not declare: every agent, "
                             "this one included, fails to start such trials")
    return {k: declared[k] for k in sorted(env)}


def _launch_command(url: str, model_dir: pathlib.Path) -> Dict[str, Any]:
    """Register as an agent, create a one-trial experiment and take its launch."""
    from determined._version import AGENT_PROTOCOL, __version__
    from determined.common.api import pack_context

    api = f"{url}/api/v1"
    r = httpx.post(f"{api}/agents/{AGENT_ID}/register", timeout=60, json={
        "slots": 1, "label": "", "running": [], "version": __version__,
        "protocol": AGENT_PROTOCOL, "slot_gpus": []})
    r.raise_for_status()
    session = r.json()["session"]
    config = {"entrypoint": "model_def:TinyTrial", "max_restarts": 0,
              "hyperparameters": {"global_batch_size": 4, "dropout": 0.1, "lr": 0.1},
              "searcher": {"name": "single", "metric": "validation_loss",
                           "max_length": {"batches": 4}}}
    r = httpx.post(f"{api}/experiments", timeout=60, json={
        "config": config, "activate": True,
        "model_def": base64.b64encode(pack_context(str(model_dir))).decode()})
    r.raise_for_status()
    exp_id = r.json()["id"]
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            r = httpx.get(f"{api}/agents/{AGENT_ID}/commands", timeout=60,
                          params={"session": session, "wait": 5})
            r.raise_for_status()
            for command in r.json()["commands"]:
                if command.get("type") == "launch":
                    return command
        raise AssertionError(f"the master sent agent {AGENT_ID} no launch in 120 s")
    finally:
        httpx.post(f"{api}/experiments/{exp_id}/kill", timeout=60)
        httpx.post(f"{api}/agents/{AGENT_ID}/deregister", json={"session": session},
                   timeout=60)


def capture(url: str, model_dir: pathlib.Path) -> Dict[str, Any]:
    """The agent wire schema of the master at ``url`` (see the module docstring)."""
    command = _launch_command(url, model_dir)
    spec = command["spec"]
    openapi = httpx.get(f"{url}/openapi.json", timeout=60).json()
    return {
        "launch_command": {k: _json_type(v) for k, v in sorted(command.items())},
        "trial_spec": {k: _json_type(v) for k, v in sorted(spec.items())},
        "trial_env": _trial_env_types(spec["env"]),
        **_request_sections(openapi),
    }


def breaking_changes(recorded: Dict[str, Any], current: Dict[str, Any]) -> List[str]:
    """The changes from ``recorded`` to ``current`` an older agent (or, for the request
    sections, an older agent's requests) cannot survive, one sentence each."""
    out: List[str] = []
    for section in sorted(set(recorded) | set(current)):
        old, new = recorded.get(section, {}), current.get(section, {})
        for key in sorted(set(old) - set(new)):
            out.append(f"{section}: {key!r} removed")
        for key in sorted(set(old) & set(new)):
            if section in REQUEST_SECTIONS:
                if old[key]["type"] != new[key]["type"]:
                    out.append(f"{section}: {key!r} changed type {old[key]['type']} -> "
                               f"{new[key]['type']}")
                if new[key]["required"] and not old[key]["required"]:
                    out.append(f"{section}: {key!r} became required")
            elif old[key] != new[key]:
                out.append(f"{section}: {key!r} changed type {old[key]} -> {new[key]}")
        for key in sorted(set(new) - set(old)):
            if section in STRICT_SECTIONS:
                out.append(f"{section}: {key!r} added (older agents pass the trial env to "
                           "TrialEnv(**env): any new key fails their trials)")
            elif section in REQUEST_SECTIONS and new[key]["required"]:
                out.append(f"{section}: {key!r} added as required (older agents omit it)")
            elif section not in LENIENT_SECTIONS + REQUEST_SECTIONS:
                out.append(f"{section}: {key!r} added to a section this test does not know")
    return out


def compatible_changes(recorded: Dict[str, Any], current: Dict[str, Any]) -> List[str]:
    """Keys ``current`` adds that older agents survive (record them, keep the protocol)."""
    return [f"{section}: {key!r} added"
            for section in sorted(set(current) & set(LENIENT_SECTIONS + REQUEST_SECTIONS))
            for key in sorted(set(current[section]) - set(recorded.get(section, {})))
            if section in LENIENT_SECTIONS or not current[section][key]["required"]]


def recorded_schemas() -> Dict[str, Any]:
    with open(SCHEMA_FILE, encoding="utf-8") as f:
        return json.load(f)


def _main(argv: List[str]) -> int:
    sys.path.insert(0, str(HERE.parent / "master"))
    from master_testing import ConfiguredMasterProcess

    from determined._version import AGENT_PROTOCOL

    with tempfile.TemporaryDirectory() as root:
        master = ConfiguredMasterProcess(root, {"resource_manager": {"slots": 0}}).start()
        try:
            schema = capture(master.url, HERE.parent / "fixtures" / "tiny_pytorch")
        finally:
            master.stop()
    if "--write" in argv:
        schemas = recorded_schemas() if SCHEMA_FILE.exists() else {}
        schemas[str(AGENT_PROTOCOL)] = schema
        with open(SCHEMA_FILE, "w", encoding="utf-8") as f:
            json.dump(dict(sorted(schemas.items(), key=lambda kv: int(kv[0]))), f, indent=2)
            f.write("\n")
        print(f"recorded the schema of agent protocol {AGENT_PROTOCOL} in {SCHEMA_FILE}")
    else:
        print(json.dumps({str(AGENT_PROTOCOL): schema}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
