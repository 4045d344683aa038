"""Request and config size limits (master config ``limits``): a big body is a 413 before
it is read, a YAML config over its byte limit a 413 before it is parsed, too many keys
or levels a 400; every answer names its limit, nothing is stored and the master's
memory stays bounded."""

import base64
import json

import httpx
import pytest
import yaml

from determined.common.api import pack_context
from master_testing import ConfiguredMasterProcess

LIMITS = {"max_request_bytes": 8_000_000, "max_config_bytes": 200_000,
          "max_config_keys": 2000, "max_config_depth": 12}


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = ConfiguredMasterProcess(str(tmp_path_factory.mktemp("limits")), {
        "resource_manager": {"slots": 0}, "limits": LIMITS}).start(timeout=120)
    yield m
    m.stop()


def _peak_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])


def _nested(depth):
    node = {"leaf": 1}
    for _ in range(depth):
        node = {"n": node}
    return node


def test_oversized_requests_and_configs_are_refused_naming_the_limit(master, tiny_dir):
    base = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    model_def = base64.b64encode(pack_context(str(tiny_dir))).decode()
    before = _peak_rss_kb(master.proc.pid)
    # A 34 MB YAML config of 1.8 M keys (the report's): refused by its Content-Length.
    big_yaml = "".join(f"k{i}: {i}\n" for i in range(1_800_000))
    assert len(big_yaml) > 20_000_000
    body = json.dumps({"config": big_yaml, "model_def": model_def, "activate": False})
    with master.client() as api:
        r = api.post("/experiments", content=body,
                     headers={"Content-Type": "application/json"})
        assert r.status_code == 413, r.text[:300]
        assert "limits.max_request_bytes" in r.json()["error"]
        assert str(LIMITS["max_request_bytes"]) in r.json()["error"]

    def chunks():  # no Content-Length: read up to the limit only
        for i in range(0, len(body), 1 << 20):
            yield body[i:i + (1 << 20)].encode()

    with httpx.Client(base_url=master.url + "/api/v1", timeout=60) as api:
        r = api.post("/experiments", content=chunks(),
                     headers={"Content-Type": "application/json"})
        assert r.status_code == 413 and "limits.max_request_bytes" in r.text, r.text[:300]

    cases = [
        # YAML text over max_config_bytes, under the body limit: 413 before parsing.
        ("".join(f"k{i}: {i}\n" for i in range(40_000)), 413, "limits.max_config_bytes"),
        # Small in bytes, many keys / deep: 400, as YAML text and as a JSON object.
        (yaml.safe_dump(dict(base, data={f"k{i}": i for i in range(5000)})), 400,
         "limits.max_config_keys"),
        (dict(base, data={f"k{i}": i for i in range(5000)}), 400, "limits.max_config_keys"),
        (yaml.safe_dump(dict(base, data=_nested(40))), 400, "limits.max_config_depth"),
        (dict(base, data=_nested(40)), 400, "limits.max_config_depth"),
        ("[" * 5000 + "]" * 5000, 400, "limits.max_config_depth"),
    ]
    with master.client() as api:
        for config, status, limit in cases:
            r = api.post("/experiments", json={"config": config, "model_def": model_def,
                                               "activate": False})
            assert r.status_code == status, (limit, r.text[:300])
            assert limit in r.json()["error"] and r.json()["details"][0]["message"] == limit
        assert api.get("/experiments").json()["experiments"] == []
        # A config within the limits is accepted.
        r = api.post("/experiments", json={"config": base, "model_def": model_def,
                                           "activate": False})
        assert r.status_code == 201, r.text
    grown_mb = (_peak_rss_kb(master.proc.pid) - before) / 1024
    assert grown_mb < 150, f"the master's peak memory grew by {grown_mb:.0f} MB"
    assert "Traceback" not in master.log()
