"""A small fuzz of every route in the master's OpenAPI schema (a real master process):
odd path and query values (huge and negative integers, long or odd strings) and JSON
bodies of the wrong shapes must get a 2xx-4xx answer, never a 500."""

import json
import os
from urllib.parse import quote
from typing import Any, Dict, List, Tuple

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from master_testing import MasterProcess

# Streams and proxied services answer slowly by design; task creation starts processes.
_SKIP = ("/proxy/", "/ui/events", "/master/logs")
_SKIP_OPS = {("post", "/api/v1/tasks")}

_ODD_SCALARS = st.one_of(
    st.sampled_from([0, -1, 1, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 2**70, 10**30]),
    st.integers(),
    st.sampled_from(["", "x", "../..", "%00", "a" * 5000, "1e309", "NaN", "true", "null"]),
    st.text(max_size=20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
)
_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20),
              st.floats(allow_nan=False, allow_infinity=False),
              st.sampled_from([2**63, 2**70, -(2**70)])),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12,
)


def _operations(spec: Dict[str, Any]) -> List[Tuple[str, str, Dict[str, Any]]]:
    ops = []
    for path, methods in sorted(spec["paths"].items()):
        if any(s in path for s in _SKIP):
            continue
        for method, op in sorted(methods.items()):
            if method in ("get", "post", "put", "patch", "delete") and \
                    (method, path) not in _SKIP_OPS:
                ops.append((method, path, op))
    return ops


def _body_fields(spec: Dict[str, Any], op: Dict[str, Any]) -> List[str]:
    schema = (op.get("requestBody", {}).get("content", {}).get("application/json", {})
              .get("schema", {}))
    if "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return sorted(schema.get("properties", {}))


@pytest.fixture(scope="module")
def fuzz_master(tmp_path_factory):
    master = MasterProcess(str(tmp_path_factory.mktemp("fuzz")), slots=0).start(timeout=120)
    yield master
    master.stop()


@pytest.fixture(scope="module")
def spec(fuzz_master):
    return httpx.get(fuzz_master.url + "/openapi.json", timeout=30).json()


# API_FUZZ_EXAMPLES=5000 runs a longer search with fresh random draws (the default run
# draws the same 150 cases every time).
_EXAMPLES = int(os.environ.get("API_FUZZ_EXAMPLES", "150"))


@settings(max_examples=_EXAMPLES, deadline=None,
          derandomize="API_FUZZ_EXAMPLES" not in os.environ,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_no_route_answers_500(fuzz_master, spec, data):
    ops = _operations(spec)
    i = data.draw(st.integers(0, len(ops) - 1), label="operation")
    method, path, op = ops[i]
    data.draw(st.just(f"{method.upper()} {path}"), label="route")
    url = path
    params = {}
    for p in op.get("parameters", []):
        value = data.draw(_ODD_SCALARS, label=p["name"])
        if p["in"] == "path":
            url = url.replace("{%s}" % p["name"], quote(str(value), safe="") or "0")
        elif p["in"] == "query" and p["name"] not in ("follow", "wait"):
            if data.draw(st.booleans(), label=f"send {p['name']}"):
                params[p["name"]] = str(value)
    body = None
    if method in ("post", "put", "patch"):
        fields = _body_fields(spec, op)
        if fields and data.draw(st.booleans(), label="shaped body"):
            body = {f: data.draw(_JSON, label=f) for f in fields
                    if data.draw(st.booleans(), label=f"send {f}")}
        else:
            body = data.draw(_JSON, label="body")
    with httpx.Client(base_url=fuzz_master.url, timeout=30) as client:
        r = client.request(method.upper(), url, params=params,
                           content=None if body is None else json.dumps(body),
                           headers={"Content-Type": "application/json"})
    assert r.status_code < 500, (method, url, params, body, r.status_code, r.text[:500])
