"""Upstream 0.13 trial code and configs on a real master: the low-level controller API,
YAML 1.2 hyperparameters, bounded aliases, container-era fields (environment variables,
startup-hook.sh, bind mounts, a working directory per trial), accepted-without-effect
warnings, global_batch_size < slots_per_trial checked when the trial starts."""

import base64
import json
import pathlib
import time

import pytest

from determined.common.api import pack_context
from master_testing import wait_for_state

FIXTURE = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "controller_trial"

CONFIG = """
entrypoint: model_def:LinearTrial
scheduling_unit: 5
data: {{facts_file: {facts}}}
environment:
  image: determinedai/environments:py-3.6.9-pytorch-1.4-tf-1.15-cpu
  environment_variables: [COMPAT_A=list-value{extra}]
bind_mounts:
  - {{host_path: {mount}, container_path: mounted}}
hyperparameters:
  global_batch_size: {gbs}
  lr: 1e-4
searcher: {{name: single, metric: validation_error, max_length: {{batches: 10}}}}
resources: {{slots_per_trial: {slots}}}
max_restarts: 0
"""


def _create(client, text):
    body = {"config": text, "model_def": base64.b64encode(pack_context(str(FIXTURE))).decode()}
    return client.post("/experiments", json=body)


def _logs(client, trial_id):
    return "\n".join(line["line"] for line in
                     client.get(f"/trials/{trial_id}/logs").json()["logs"])


def _trial_log_containing(client, exp_id, text, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        exp = client.get(f"/experiments/{exp_id}").json()
        trials = exp.get("trials") or []
        logs = _logs(client, trials[0]["id"]) if trials else ""
        if text in logs:
            return exp, logs
        assert time.monotonic() < deadline, f"no {text!r} in the logs: {logs[-3000:]}"
        time.sleep(0.3)


@pytest.mark.e2e
def test_upstream_trial_and_config_on_a_master(master_factory, tmp_path):
    master = master_factory(slots=2)
    mount = tmp_path / "mount-src"
    mount.mkdir()
    (mount / "shared.txt").write_text("hi")
    facts = tmp_path / "facts.jsonl"
    with master.client() as c:
        r = _create(c, CONFIG.format(facts=facts, mount=mount, extra="", gbs=16, slots=1))
        assert r.status_code == 201, r.text
        exp_id = r.json()["id"]
        assert [w.split(" ")[0] for w in r.json()["warnings"]] == ["environment.image"]
        exp = wait_for_state(c, exp_id, ["COMPLETED", "ERROR"], timeout=120)
        assert exp["state"] == "COMPLETED", _logs(c, exp["trials"][0]["id"])
        (seen,) = [json.loads(line) for line in facts.read_text().splitlines()]
        # YAML 1.2: 1e-4 reaches the trial as a float.
        assert seen["hparams"]["lr"] == 1e-4 and seen["hparam_types"]["lr"] == "float"
        assert seen["env"]["COMPAT_A"] == "list-value"  # environment_variables
        assert seen["env"]["COMPAT_B"] == "from-hook"  # exported by startup-hook.sh
        assert seen["hook_marker"] and seen["mounted"] == ["shared.txt"]
        assert pathlib.Path(seen["cwd"]) != FIXTURE and not (FIXTURE / "written-by-trial.txt").exists()
        logs = _logs(c, exp["trials"][0]["id"])
        assert "startup hook: preparing list-value" in logs

        # A failing startup hook fails the trial with its output.
        r = _create(c, CONFIG.format(facts=facts, mount=mount, extra=", COMPAT_FAIL_HOOK=1",
                                     gbs=16, slots=1))
        exp, logs = _trial_log_containing(c, r.json()["id"], "startup-hook.sh failed")
        assert "exit code 3" in logs and "refusing to start (COMPAT_FAIL_HOOK)" in logs
        assert wait_for_state(c, exp["id"], ["ERROR", "COMPLETED"])["state"] == "ERROR"

        # global_batch_size < slots_per_trial: created (as 0.13), the trial says why it fails.
        r = _create(c, CONFIG.format(facts=facts, mount=mount, extra="", gbs=1, slots=2))
        assert r.status_code == 201, r.text
        _trial_log_containing(c, r.json()["id"], "global_batch_size >= resources.slots_per_trial")

        # Billion laughs: a clear 400 at once, and the master keeps serving.
        lol = "\n".join([f'{chr(97)}: &{chr(97)} ["lol","lol","lol","lol","lol","lol","lol","lol"]']
                        + [f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9)
                           + "]" for i in range(1, 9)])
        start = time.monotonic()
        r = _create(c, lol)
        assert r.status_code == 400 and "aliases expand" in r.text
        assert time.monotonic() - start < 10
        assert c.get("/experiments").status_code == 200


@pytest.mark.e2e
def test_determined_common_api_against_a_master(master_factory, tmp_path, capsys):
    from determined_common import api
    from determined_common.api import errors
    from determined_common.experimental import Determined, Session

    master = master_factory(slots=1)
    mount = tmp_path / "m"
    mount.mkdir()
    text = CONFIG.format(facts=tmp_path / "f.jsonl", mount=mount, extra="", gbs=8, slots=1)
    exp_id = api.create_experiment(master.url, text, str(FIXTURE))
    assert api.follow_experiment_logs(master.url, exp_id) == "COMPLETED"
    assert "startup hook: preparing list-value" in capsys.readouterr().out
    exp = api.get(master.url, f"experiments/{exp_id}").json()
    assert exp["state"] == "COMPLETED"
    api.patch_experiment(master.url, exp_id, {"description": "via determined_common"})
    assert Session(master.url, None).get(f"experiments/{exp_id}").json()["description"] == \
        "via determined_common"
    ckpt = Determined(master.url).get_experiment(exp_id).top_checkpoint()
    assert ckpt.uuid
    with pytest.raises(errors.NotFoundException):
        api.get(master.url, "experiments/999")
    assert api.create_experiment(master.url, text, str(FIXTURE), validate_only=True) == 0
