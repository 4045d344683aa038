"""Master parity (issue 9 part 5-6) against a real master and the real ``det``: per-batch
metrics and num_inputs, checkpoint metadata, the model registry, templates, GC policy,
experiment deletion, the master's log, draining agents and slots, ``det -u``."""

import json
import os
import re
import time

import httpx
import pytest
import yaml

from det_cli_testing import run_det, run_det_in_terminal
from master_testing import wait_for_state, wait_until
from determined.experimental import Determined, ModelOrderBy, ModelSortBy

pytestmark = pytest.mark.e2e


def det(master, *args, code=0, env=None, stdin=None):
    out = run_det(["-m", master.url, *args], timeout=180, env=env)
    assert out.returncode == code, f"{args}: {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def config_file(tmp_path, tiny_dir, name="c.yaml", **changes):
    cfg = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    cfg.update(changes)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(cfg))
    return path


def create(master, config, tiny_dir, *flags):
    out = det(master, "e", "create", config, tiny_dir, *flags)
    return int(out.stdout.split("Created experiment")[1].split()[0])


@pytest.fixture(scope="module")
def done(shared_master, tmp_path_factory):
    """One completed experiment (checkpoints at 20 and 40 batches; GC keeps 40)."""
    import pathlib

    tiny_dir = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "tiny_pytorch"
    tmp = tmp_path_factory.mktemp("parity")
    exp_id = create(shared_master, config_file(tmp, tiny_dir), tiny_dir)
    det(shared_master, "e", "wait", exp_id, "--polling-interval", "0.3")
    return exp_id


def test_batch_metrics_and_num_inputs(shared_master, done):
    exp = json.loads(det(shared_master, "e", "describe", done, "--json", "--metrics").stdout)
    assert isinstance(exp, list) and len(exp) == 1  # upstream prints a list
    steps = exp[0]["trials"][0]["steps"]
    training = [s for s in steps if s["metrics"]]
    assert [s["total_batches"] for s in training] == [10, 20, 30, 40]
    for s in training:  # scheduling_unit 10, global_batch_size 16
        assert len(s["metrics"]["batch_metrics"]) == 10 and s["metrics"]["num_inputs"] == 160
        assert set(s["metrics"]["batch_metrics"][0]) >= {"loss"}
    validated = [s for s in steps if s["validation"]]
    assert validated[-1]["validation"]["metrics"]["num_inputs"] > 0
    assert "validation_loss" in validated[-1]["validation"]["metrics"]["validation_metrics"]

    tid = exp[0]["trials"][0]["id"]
    t = json.loads(det(shared_master, "t", "describe", tid, "--json", "--metrics").stdout)
    assert [s["metrics"]["num_inputs"] for s in t["steps"] if s["metrics"]] == [160] * 4

    trial = Determined(shared_master.url).get_experiment(done).get_trials()[0]
    loads = trial.get_workloads()
    assert [w["num_inputs"] for w in loads if w["kind"] == "training"] == [160] * 4
    avg = sum(b["loss"] for b in loads[0]["batch_metrics"]) / 10
    assert abs(loads[0]["metrics"]["loss"] - avg) < 1e-6


def test_checkpoint_metadata_is_stored_by_the_master(shared_master, done):
    d = Determined(shared_master.url)
    ckpt = d.get_experiment(done).top_checkpoint()
    assert ckpt.validation["state"] == "STATE_COMPLETED"
    assert "validation_loss" in ckpt.validation["metrics"]["validationMetrics"]
    ckpt.add_metadata({"stage": "prod", "tags": ["a", "b"]})
    ckpt.add_metadata({"stage": "staging"})
    ckpt.remove_metadata(["tags"])
    assert ckpt.metadata == {"stage": "staging"}
    again = Determined(shared_master.url).get_checkpoint(ckpt.uuid)  # a fresh client
    assert again.metadata == {"stage": "staging"}
    described = json.loads(det(shared_master, "c", "describe", ckpt.uuid, "--json").stdout)
    assert described["validation"]["metrics"]["validationMetrics"]["validation_loss"] > 0
    listed = json.loads(det(shared_master, "checkpoint", "list", done, "--json").stdout)
    assert ckpt.uuid in [c["uuid"] for c in listed]
    info = det(shared_master, "master", "info").stdout
    assert "version: 0.13" in info and "cluster_id:" in info


def test_model_registry_sdk_and_cli(shared_master, done):
    d = Determined(shared_master.url)
    uuid = d.get_experiment(done).top_checkpoint().uuid
    beta = d.create_model("beta-net", description="second", metadata={"team": "x"})
    alpha = d.create_model("alpha-net", description="first")
    assert [m.name for m in d.get_models()] == ["alpha-net", "beta-net"]
    assert [m.name for m in d.get_models(sort_by=ModelSortBy.NAME,
                                         order_by=ModelOrderBy.DESC)] == ["beta-net", "alpha-net"]
    assert [m.name for m in d.get_models(sort_by=ModelSortBy.DESCRIPTION,
                                         order_by=ModelOrderBy.DESCENDING)] == ["beta-net",
                                                                                 "alpha-net"]
    assert [m.name for m in d.get_models(name="alp")] == ["alpha-net"]
    assert alpha.get_version() is None
    v1 = alpha.register_version(uuid)
    v2 = alpha.register_version(uuid)
    assert (v1.model_version, v2.model_version, v2.model_name) == (1, 2, "alpha-net")
    assert alpha.get_version().model_version == 2 and alpha.get_version(1).uuid == uuid
    assert [c.model_version for c in alpha.get_versions()] == [2, 1]
    assert [c.model_version for c in alpha.get_versions(ModelOrderBy.ASC)] == [1, 2]
    beta.add_metadata({"owner": "ml", "team": "y"})
    beta.remove_metadata(["owner"])
    assert d.get_model("beta-net").metadata == {"team": "y"}
    with pytest.raises(Exception, match="409|already exists"):
        d.create_model("alpha-net")

    det(shared_master, "model", "create", "cli-net", "--description", "via det")
    out = det(shared_master, "model", "register-version", "cli-net", uuid, "--json").stdout
    assert json.loads(out)["version"] == 1
    listed = json.loads(det(shared_master, "model", "list", "--sort-by", "name",
                            "--order-by", "desc", "--json").stdout)
    assert [m["name"] for m in listed] == ["cli-net", "beta-net", "alpha-net"]
    described = json.loads(det(shared_master, "model", "describe", "cli-net", "--json").stdout)
    assert described["description"] == "via det" and described["version"]["uuid"] == uuid
    versions = json.loads(det(shared_master, "model", "list-versions", "alpha-net",
                              "--json").stdout)
    assert [v["version"] for v in versions["versions"]] == [2, 1]
    text = det(shared_master, "model", "list-versions", "alpha-net",
               env={"COLUMNS": "80"}).stdout
    assert all(len(line) <= 80 for line in text.splitlines()) and uuid[:8] in text
    # The searcher metric, short, in a column of its own; every metric in `describe`.
    lines = text.splitlines()
    header = next(l for l in lines if l.startswith("version"))
    assert [c.strip() for c in header.split("|")][4] == "validation_loss", text
    value = float(lines[lines.index(header) + 2].split("|")[4])
    metrics = v1.validation["metrics"]["validationMetrics"]
    assert value == float(f"{metrics['validation_loss']:.4g}"), text
    assert "{" not in text and "accuracy" not in text, text
    shown = det(shared_master, "model", "describe", "alpha-net", env={"COLUMNS": "80"}).stdout
    assert all(len(line) <= 80 for line in shown.splitlines()), shown
    assert "Validation metrics: " in shown and "{" not in shown, shown
    assert " ".join(shown.split()).count("=") >= len(metrics), shown  # all, k=v
    # Registering says which version it made, the checkpoint in the table: 80 columns.
    made = det(shared_master, "model", "register-version", "cli-net", uuid,
               env={"COLUMNS": "80"}).stdout
    assert made.splitlines()[0] == "Registered version 2 of model 'cli-net':", made
    assert uuid in made and all(len(line) <= 80 for line in made.splitlines()), made
    bad = det(shared_master, "model", "register-version", "cli-net", "nope", code=2)
    assert "Expected a checkpoint id in UUID form" in bad.stderr, bad.stderr  # malformed
    assert "Traceback" not in bad.stderr
    absent = "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"
    bad = det(shared_master, "model", "register-version", "cli-net", absent, code=1)
    assert "not found" in bad.stderr and "Traceback" not in bad.stderr
    # A version or slot that does not exist: the message said "version of model 'x' 7
    # not found"; it names what exists.
    bad = det(shared_master, "model", "describe", "alpha-net", "--version", "7", code=1)
    assert bad.stderr.strip() == ("det: error: model 'alpha-net' has no version 7 (its "
                                  "versions: 1, 2) (HTTP 404)"), bad.stderr
    det(shared_master, "model", "create", "empty-net")
    bad = det(shared_master, "model", "describe", "empty-net", "--version", "1", code=1)
    assert "model 'empty-net' has no version 1 (it has none yet)" in bad.stderr, bad.stderr
    bad = det(shared_master, "-u", "admin", "slot", "disable", "embedded", "7", code=1)
    assert bad.stderr.strip() == ("det: error: agent 'embedded' has no slot 7 (its slots: "
                                  "0-1) (HTTP 404)"), bad.stderr


def test_templates_merge_into_created_experiments(shared_master, tiny_dir, tmp_path):
    tpl = tmp_path / "tpl.yaml"
    tpl.write_text("description: from the template\nlabels: [tpl]\n"
                   "hyperparameters: {extra: 7}\nmax_restarts: 1\n")
    det(shared_master, "template", "set", "base", tpl)
    assert json.loads(det(shared_master, "tpl", "ls", "--json").stdout)[0]["name"] == "base"
    assert "from the template" in det(shared_master, "template", "describe", "base").stdout
    exp_id = create(shared_master, config_file(tmp_path, tiny_dir), tiny_dir,
                    "--template", "base", "--paused")
    config = json.loads(det(shared_master, "e", "config", exp_id, "--json").stdout)
    assert config["description"] == "from the template" and config["labels"] == ["tpl"]
    hparams = config["hyperparameters"]
    assert hparams["extra"]["val"] == 7 and hparams["lr"]["val"] == 0.1
    assert config["max_restarts"] == 2  # the experiment's own value wins
    det(shared_master, "e", "kill", exp_id)
    det(shared_master, "template", "rm", "base")
    missing = det(shared_master, "e", "create", config_file(tmp_path, tiny_dir), tiny_dir,
                  "--template", "base", code=1)
    assert "no template" in missing.stderr and "Traceback" not in missing.stderr


def test_set_refuses_a_template_with_unknown_or_wrongly_typed_fields(shared_master, tmp_path):
    """`det template set` stored any mapping; an unknown field failed only when an
    experiment used the template. Now set refuses it (exit 1, naming each field), the
    API answers 400, and nothing is stored. Task-config fields stay accepted."""
    tpl = tmp_path / "typo.yaml"
    tpl.write_text("max_restart: 1\nresources: {slots_per_trial: two}\n")
    out = det(shared_master, "template", "set", "typo", tpl, code=1)
    lines = out.stderr.strip().splitlines()
    assert lines[0] == "det: error: Invalid template 'typo' (2 errors) (HTTP 400):", out.stderr
    assert any(line.startswith("  - max_restart: unknown field (not part of the experiment "
                               "config schema)") for line in lines), out.stderr
    assert any(line.startswith("  - resources.slots_per_trial: Input should be a valid "
                               "integer") for line in lines), out.stderr
    assert "Traceback" not in out.stderr
    det(shared_master, "template", "describe", "typo", code=1)  # nothing stored
    tpl.write_text("- a list\n")
    out = det(shared_master, "template", "set", "typo", tpl, code=1)
    assert out.stderr.startswith(f"det: error: Invalid template file {tpl} (1 error):\n"
                                 "  - Expected a mapping at the top level. Received: list"), out.stderr

    r = httpx.put(shared_master.url + "/api/v1/templates/t2",
                  json={"config": {"idle_timeout": -5, "searcher": {"name": "nope"}}})
    assert r.status_code == 400, r.text
    fields = {d["field"] for d in r.json()["details"]}
    assert fields == {"idle_timeout", "searcher.name"}, r.json()

    # A partial config is a template; so are the fields of a task config.
    tpl.write_text("resources: {slots: 2, slots_per_trial: 2}\nidle_timeout: 600\n"
                   "searcher: {name: adaptive_asha, metric: loss, max_trials: 4}\n"
                   "environment: {environment_variables: [A=1]}\n")
    det(shared_master, "template", "set", "partial", tpl)
    det(shared_master, "template", "rm", "partial")


def test_master_config_prints_json_as_in_0_13_and_yaml_on_request(shared_master):
    """`det master config` prints JSON as 0.13 did (scripts parse it; `--json` says so
    explicitly); `--yaml` prints YAML, as `det e config` prints an experiment's."""
    api = httpx.get(shared_master.url + "/api/v1/master/config").json()
    assert json.loads(det(shared_master, "master", "config").stdout) == api
    assert json.loads(det(shared_master, "master", "config", "--json").stdout) == api
    text = det(shared_master, "master", "config", "--yaml").stdout
    assert not text.lstrip().startswith("{"), text
    assert yaml.safe_load(text) == api


def test_template_names_the_routes_cannot_carry_and_unknown_routes(shared_master, tmp_path):
    """`det template set '' F` said "Set template" and set nothing (the master redirected
    the PUT); 'a/b' printed the raw {"detail":"Not Found"}. Both are refused naming the
    name; a path no API route matches is a 404 naming it."""
    tpl = tmp_path / "t.yaml"
    tpl.write_text("description: x\n")
    for name in ("", "a/b"):
        out = det(shared_master, "template", "set", name, tpl, code=2)
        assert out.stderr.strip() == ("det: error: Expected a template name of 1-255 "
                                      f"characters without '/'. Received: {name!r}"), out.stderr
    names = [t["name"] for t in json.loads(det(shared_master, "template", "list",
                                                 "--json").stdout)]
    assert "" not in names and "a/b" not in names
    r = httpx.get(shared_master.url + "/api/v1/templates/a/b")
    assert r.status_code == 404
    assert r.json() == {"error": "No API route GET /api/v1/templates/a/b (the routes are "
                                 "listed at /docs)"}
    r = httpx.delete(shared_master.url + "/api/v1/master")
    assert r.status_code == 405 and r.json()["error"].startswith("No API route DELETE")
    assert "GET" in r.headers["allow"]


def test_gc_policy_previews_then_applies(shared_master, tiny_dir, tmp_path):
    cfg = config_file(tmp_path, tiny_dir, checkpoint_storage={"save_trial_latest": 2,
                                                              "save_trial_best": 0})
    exp_id = create(shared_master, cfg, tiny_dir)
    det(shared_master, "e", "wait", exp_id, "--polling-interval", "0.3")
    c = httpx.Client(base_url=shared_master.url + "/api/v1")
    kept = [ck for ck in c.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
            if ck["state"] == "COMPLETED"]
    assert sorted(ck["total_batches"] for ck in kept) == [20, 40]
    root = c.get("/master/config").json().get("checkpoint_storage", {}).get("host_path")
    flags = ["--save-experiment-best", "0", "--save-trial-best", "0",
             "--save-trial-latest", "1"]
    preview = det(shared_master, "e", "set", "gc-policy", exp_id, *flags).stdout
    first = min(kept, key=lambda ck: ck["total_batches"])["uuid"]
    assert f"deletes 1 checkpoint of experiment {exp_id}:" in preview and first[:8] in preview
    assert "Nothing changed" in preview
    states = {ck["uuid"]: ck["state"]
              for ck in c.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]}
    assert states[first] == "COMPLETED"
    applied = det(shared_master, "e", "set", "gc-policy", exp_id, *flags, "--yes").stdout
    assert applied.strip().endswith("deleted 1 checkpoint"), applied
    states = {ck["uuid"]: ck["state"]
              for ck in c.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]}
    assert states[first] == "DELETED" and list(states.values()).count("COMPLETED") == 1
    if root:
        assert not os.path.exists(os.path.join(root, first))
    stored = c.get(f"/experiments/{exp_id}").json()["config"]["checkpoint_storage"]
    assert stored["save_trial_latest"] == 1 and stored["save_trial_best"] == 0


def test_delete_experiment_is_for_its_owner_or_admins_and_removes_checkpoints(
        shared_master, tiny_dir, tmp_path):
    exp_id = create(shared_master, config_file(tmp_path, tiny_dir), tiny_dir)
    other = create(shared_master, config_file(tmp_path, tiny_dir), tiny_dir)
    det(shared_master, "e", "wait", exp_id, "--polling-interval", "0.3")
    det(shared_master, "e", "wait", other, "--polling-interval", "0.3")
    d = Determined(shared_master.url)
    ckpt = d.get_experiment(exp_id).top_checkpoint()
    assert os.path.isdir(ckpt.path)
    det(shared_master, "-u", "admin", "user", "create", "not-the-owner")
    refused = det(shared_master, "-u", "not-the-owner", "e", "delete", exp_id, "--yes", code=1)
    assert "may not delete experiment" in refused.stderr and "'determined'" in refused.stderr
    # Its owner (`determined`, not an admin) deletes it, as with 0.13's DET_ADMIN=1 det;
    # the help says so (it said "admins only").
    helped = " ".join(det(shared_master, "e", "--help", env={"COLUMNS": "200"}).stdout.split())
    assert "checkpoints and records (its owner or an admin)" in helped, helped
    deleted = det(shared_master, "experiment", "delete", exp_id, "--yes",
                  env={"DET_ADMIN": "1"}).stdout
    counted = r"(1 checkpoint|\d\d+ checkpoints|[02-9] checkpoints)"
    assert re.search(rf"Deleted experiment {exp_id} \({counted} and \d+ TensorBoard event "
                     r"files? removed from storage\)", deleted), deleted
    assert not os.path.exists(ckpt.path)
    c = httpx.Client(base_url=shared_master.url + "/api/v1")
    assert c.get(f"/experiments/{exp_id}").status_code == 404
    det(shared_master, "-u", "admin", "e", "delete", other, "--yes")  # admins: anyone's
    assert c.get(f"/experiments/{other}").status_code == 404
    logs = det(shared_master, "master", "logs").stdout
    assert f"experiment {exp_id} deleted by determined" in logs
    assert f"experiment {other} deleted by admin" in logs
    tail = det(shared_master, "master", "logs", "--tail", "1").stdout.strip().splitlines()
    assert len(tail) == 1


def test_user_flag_acts_for_one_command(shared_master, tmp_path):
    auth = tmp_path / "auth"
    env = {"DET_AUTH_DIR": str(auth)}
    assert "'determined'" in det(shared_master, "user", "whoami", env=env).stdout
    assert "'admin'" in det(shared_master, "-u", "admin", "user", "whoami", env=env).stdout
    assert "'admin'" in det(shared_master, "user", "whoami", "-u", "admin", env=env).stdout
    assert "'determined'" in det(shared_master, "user", "whoami", env=env).stdout


def test_disabled_agent_and_slot_get_no_new_trials(shared_master, tiny_dir, tmp_path):
    c = httpx.Client(base_url=shared_master.url + "/api/v1")
    refused = det(shared_master, "slot", "disable", "embedded", "0", code=1)
    assert "Only an admin" in refused.stderr
    det(shared_master, "-u", "admin", "slot", "disable", "embedded", "0")
    slots = json.loads(det(shared_master, "slot", "list", "--json").stdout)
    assert [s["enabled"] for s in slots] == [False, True]
    slow = config_file(tmp_path, tiny_dir, "slow.yaml",
                       searcher={"name": "single", "metric": "validation_loss",
                                 "max_length": {"batches": 60}})
    exp_id = create(shared_master, slow, tiny_dir)
    wait_until(lambda: any(s["task"] for a in c.get("/agents").json()["agents"]
                           for s in a["slot_tasks"]), 60, "a running trial")
    tasks = [s["task"] for a in c.get("/agents").json()["agents"] for s in a["slot_tasks"]]
    assert tasks[0] is None and tasks[1] is not None  # not on the disabled slot
    det(shared_master, "-u", "admin", "agent", "disable", "embedded")
    assert json.loads(det(shared_master, "agent", "--json", "list").stdout)[0]["enabled"] is False
    wait_for_state(c, exp_id, ["COMPLETED"], timeout=120)  # the running trial goes on
    second = create(shared_master, config_file(tmp_path, tiny_dir, "c2.yaml"), tiny_dir)
    time.sleep(3)
    exp = c.get(f"/experiments/{second}").json()
    assert exp["state"] == "ACTIVE" and all(t["total_batches"] == 0 for t in exp["trials"])
    assert all(s["task"] is None for a in c.get("/agents").json()["agents"]
               for s in a["slot_tasks"])
    det(shared_master, "-u", "admin", "agent", "enable", "--all")
    det(shared_master, "-u", "admin", "slot", "enable", "embedded", "0")
    wait_for_state(c, second, ["COMPLETED"], timeout=120)


def test_follow_and_tables_in_an_80_column_terminal(shared_master, tiny_dir, tmp_path):
    import re

    cfg = config_file(tmp_path, tiny_dir, description="a description long enough to need "
                      "shortening in a table that has to fit eighty columns")
    code, text = run_det_in_terminal(["-m", shared_master.url, "e", "create", cfg, tiny_dir,
                                      "-f"], timeout=180.0, every_drawing=True)
    assert code == 0, text
    lines = [line for line in text.split("\n") if line.strip()]  # each drawing of the bar
    # The trial's log lines are printed as written (never folded: paths stay whole);
    # everything else fits.
    logged = re.compile(r"\d\d:\d\d:\d\d (INFO|WARNING|ERROR) |\[determined\] |trial \d+ ")
    assert all(len(line) <= 80 for line in lines if not logged.match(line)), [
        l for l in lines if len(l) > 80]
    assert any(re.search(r" INFO checkpoint [0-9a-f-]{36} at 40 batches$", line)
               for line in lines), lines
    bars = [line for line in lines if re.match(r"Experiment \d+ (ACTIVE|COMPLETED) ", line)]
    assert any("COMPLETED" in line and "100%" in line for line in bars), lines[-10:]
    assert re.search(r"valid\w*\u2026? 0\.\d+", bars[-1]), bars[-1]  # the best so far
    assert not [line for line in lines if re.search(r"\.py:\d+\s*$", line)]  # no source links
    code, shown = run_det_in_terminal(["-m", shared_master.url, "e", "list"], timeout=180.0)
    table = [line.rstrip() for line in shown.splitlines()]
    assert code == 0 and table[0].startswith("id") and all(len(line) <= 80 for line in table)
    assert any("a description" in line and "\u2026" in line for line in table), table
