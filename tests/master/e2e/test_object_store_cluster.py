"""Trials on a master checkpointing to real object stores (moto's S3 server, the GCS
emulator): a paused trial resumes from its object-store checkpoint, GC deletes
objects, and clients without access to the store download through the master."""

import filecmp
import os
import signal

import pytest

from det_cli_testing import run_det
from determined.storage import build_storage
from master_testing import (
    create_experiment,
    slow_model_dir,
    trial_pid,
    trial_processes,
    wait_for_state,
    wait_until,
)
from object_store_testing import BUCKET, S3_KEYS, gcs_server, s3_server

pytestmark = pytest.mark.e2e

NO_AMBIENT_CREDENTIALS = {  # the test process must not find credentials elsewhere
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE": "/nonexistent",
    "AWS_EC2_METADATA_DISABLED": "true", "NO_GCE_CHECK": "True",
    "GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent",
}


@pytest.fixture(params=["s3", "gcs"])
def store(request, tmp_path, monkeypatch):
    """(checkpoint_storage section without credentials, environment giving access)."""
    for k, v in NO_AMBIENT_CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    if request.param == "s3":
        with s3_server(str(tmp_path)) as section:
            yield ({"type": "s3", "bucket": BUCKET, "prefix": "exp",
                    "endpoint_url": section["endpoint_url"]}, dict(S3_KEYS))
    else:
        with gcs_server(str(tmp_path)) as env:
            yield {"type": "gcs", "bucket": BUCKET, "prefix": "exp"}, env


def _same_tree(a, b):
    files = sorted(os.path.relpath(os.path.join(d, n), a) for d, _, ns in os.walk(a) for n in ns)
    other = sorted(os.path.relpath(os.path.join(d, n), b) for d, _, ns in os.walk(b) for n in ns)
    assert files == other and files
    match, mismatch, errors = filecmp.cmpfiles(a, b, files, shallow=False)
    assert not mismatch and not errors


def test_object_store_checkpoints_on_a_master(store, master_factory, tiny_dir, tmp_path,
                                              monkeypatch):
    section, access = store
    for k, v in access.items():  # the master and its trials can reach the store
        monkeypatch.setenv(k, v)
    master = master_factory(slots=1)
    for k in access:  # this test process (the client) cannot
        monkeypatch.delenv(k)
    config = {
        "entrypoint": "slow_def:SlowTrial", "scheduling_unit": 10, "max_restarts": 0,
        # 0.1 s a batch: after its first checkpoint the trial has 6 s to go, so the pause
        # below lands mid-training even on a loaded machine.
        "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "sleep": 0.1},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": 80}},
        "min_validation_period": {"batches": 20}, "min_checkpoint_period": {"batches": 20},
        "checkpoint_storage": dict(section, save_trial_latest=1, save_trial_best=0,
                                   save_experiment_best=0),
    }
    with master.client() as api:
        exp_id = create_experiment(api, config, slow_model_dir(tiny_dir, tmp_path))

        def checkpoints():
            return api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]

        wait_until(lambda: len(checkpoints()) >= 1, what="a first checkpoint")
        api.post(f"/experiments/{exp_id}/pause")
        wait_until(lambda: not trial_processes(master.proc.pid), what="the runner to stop")
        api.post(f"/experiments/{exp_id}/activate")
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=120)
        assert exp["state"] == "COMPLETED", exp
        trial = exp["trials"][0]
        assert trial["total_batches"] == 80
        logs = "\n".join(l["line"] for l in
                         api.get(f"/trials/{trial['id']}/logs", params={"limit": 10000})
                         .json()["logs"])
        assert "restored from checkpoint" in logs  # from the object store, after the pause
        ckpts = checkpoints()

    kept = sorted(c["uuid"] for c in ckpts if c["state"] == "COMPLETED")
    assert len(kept) == 1 and len(ckpts) >= 3
    for k, v in access.items():
        monkeypatch.setenv(k, v)
    storage = build_storage(section)
    # GC deletes every other checkpoint's objects (in the background).
    wait_until(lambda: storage.list_checkpoints() == kept, what="GC to delete checkpoints")
    wait_until(lambda: {k.split("/")[1] for k in storage.store.list_keys("exp/")} <= {
        kept[0], "tensorboard"}, what="GC of objects")
    assert storage.store.list_keys(f"exp/{kept[0]}/")
    direct = str(tmp_path / "direct")
    storage.download(kept[0], direct)
    for k in access:
        monkeypatch.delenv(k)

    # A client that cannot read the store: the SDK and the CLI go through the master.
    from determined.experimental import Determined

    ckpt = Determined(master.url).get_checkpoint(kept[0])
    _same_tree(direct, ckpt.download(str(tmp_path / "sdk")))
    assert ckpt.load().context.models[0] is not None
    with master.client() as api:  # clear 404s, never a 500
        deleted = next(c["uuid"] for c in ckpts if c["state"] == "DELETED")
        unknown = "3e2d1c0b-9a8f-4e7d-8c6b-5a4f3e2d1c0b"
        for uuid, message in ((deleted, "DELETED"), (unknown, unknown)):
            r = api.get(f"/checkpoints/{uuid}/download")
            assert r.status_code == 404 and message in r.json()["error"], r.text
        r = api.get("/checkpoints/no-such-uuid/download")  # malformed: a 400 saying so
        assert r.status_code == 400 and "UUID form" in r.json()["error"], r.text
    out = run_det(["-m", master.url, "checkpoint", "download", kept[0], "-o",
                   str(tmp_path / "cli")])
    assert out.returncode == 0, out.stderr
    _same_tree(direct, str(tmp_path / "cli" / kept[0]))


def test_s3_secret_is_masked_and_checkpoints_report_their_sizes(master_factory, tiny_dir,
                                                                tmp_path, monkeypatch):
    """A secret_key in the experiment config reaches the trials (the store is reached
    with the config's keys alone) but no client: the API, the UI API and `det e
    config` show ***; object-store checkpoints list their files' sizes."""
    for k, v in NO_AMBIENT_CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    for k in S3_KEYS:
        monkeypatch.delenv(k, raising=False)
    secret = "s3cr3t-value-123"
    with s3_server(str(tmp_path)) as served:
        section = {"type": "s3", "bucket": BUCKET, "prefix": "masked",
                   "endpoint_url": served["endpoint_url"], "access_key": "testing",
                   "secret_key": secret}
        master = master_factory(slots=1)
        config = {
            "entrypoint": "model_def:TinyTrial", "scheduling_unit": 10, "max_restarts": 0,
            "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2},
            "searcher": {"name": "single", "metric": "validation_loss",
                         "max_length": {"batches": 20}},
            "checkpoint_storage": section,
        }
        with master.client() as api:
            exp_id = create_experiment(api, config, tiny_dir)
            exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=120)
            assert exp["state"] == "COMPLETED", exp
            shown = exp["config"]["checkpoint_storage"]
            assert shown["secret_key"] == "***" and shown["access_key"] == "testing", shown
            ui = api.get(f"/ui/experiments/{exp_id}").json()
            assert ui["config"]["checkpoint_storage"]["secret_key"] == "***"
            assert secret not in ui["config_yaml"] and secret not in api.get(
                f"/experiments/{exp_id}").text
            (ckpt,) = [c for c in api.get(f"/experiments/{exp_id}/checkpoints").json()[
                "checkpoints"] if c["state"] == "COMPLETED"]
            # The shown config, sent back as is (a fork), is refused naming the field.
            import base64

            from determined.common.api import pack_context

            r = api.post("/experiments", json={
                "config": exp["config"], "activate": False,
                "model_def": base64.b64encode(pack_context(str(tiny_dir))).decode()})
            assert r.status_code == 400 and "checkpoint_storage.secret_key" in r.text, r.text
            # A fork (parent_id, as the web UI's fork tab sends) reuses its parent's
            # credential: its trial reaches the store; someone else's fork may not.
            fork = {"config": dict(exp["config"], description="forked"), "activate": True,
                    "parent_id": exp_id, "model_def": base64.b64encode(
                        pack_context(str(tiny_dir))).decode()}
            r = api.post("/experiments", json=fork)
            assert r.status_code == 201, r.text
            child = wait_for_state(api, r.json()["id"], ["COMPLETED", "ERROR", "CANCELED"],
                                   timeout=120)
            assert child["state"] == "COMPLETED", child
            assert api.get(f"/ui/experiments/{child['id']}").json()["parent_id"] == exp_id
            assert api.post("/experiments", json=dict(fork, parent_id=99999)).status_code == 404
            admin = {"Authorization": "Bearer " + api.post(
                "/auth/login", json={"username": "admin", "password": ""}).json()["token"]}
            assert api.post("/users", json={"username": "eve"}, headers=admin).status_code == 201
            eve = {"Authorization": "Bearer " + api.post(
                "/auth/login", json={"username": "eve", "password": ""}).json()["token"]}
            r = api.post("/experiments", json=fork, headers=eve)
            assert r.status_code == 403 and "reuse the credentials of" in r.text, r.text
        out = run_det(["-m", master.url, "e", "config", str(exp_id)])
        assert out.returncode == 0 and "secret_key: '***'" in out.stdout, out
        assert secret not in out.stdout
        # The trial itself had the real key (its spec file, written by the master).
        specs = [os.path.join(d, n) for d, _, ns in os.walk(master.data_dir) for n in ns
                 if n.startswith("spec-")]
        assert specs and all(secret in open(p).read() for p in specs)
        # resources: every object of the checkpoint with its size, as the store lists them.
        storage = build_storage(section)
        sizes = storage.store.list_sizes(f"masked/{ckpt['uuid']}/")
        assert ckpt["resources"] == {k.split("/", 2)[2]: v for k, v in sizes.items()}
        assert "metadata.json" in ckpt["resources"] and all(
            v > 0 for v in ckpt["resources"].values()), ckpt["resources"]
        # A client without credentials downloads through the master despite the mask.
        from determined.experimental import Determined

        local = Determined(master.url).get_checkpoint(ckpt["uuid"]).download(
            str(tmp_path / "sdk"))
        assert sorted(os.listdir(local)) == sorted(
            {k.split("/")[0] for k in ckpt["resources"]})
        # DET_CHECKPOINT_SOURCE forces a way: the store (no credentials here: an error
        # saying so and the way out) or the master.
        forced = run_det(["-m", master.url, "checkpoint", "download", ckpt["uuid"], "-o",
                          tmp_path / "forced"], env={"DET_CHECKPOINT_SOURCE": "storage"})
        assert forced.returncode == 1, forced
        assert forced.stderr.startswith(f"det: error: checkpoint {ckpt['uuid']}: "), forced
        assert ("Unable to locate credentials (DET_CHECKPOINT_SOURCE=storage: this machine "
                "reads the store with its own credentials; unset it to download through "
                "the master)\n") in forced.stderr, forced
        via = run_det(["-m", master.url, "checkpoint", "download", ckpt["uuid"], "-o",
                       tmp_path / "via"], env={"DET_CHECKPOINT_SOURCE": "master"})
        assert via.returncode == 0 and os.listdir(tmp_path / "via" / ckpt["uuid"]), via


def test_a_bucket_that_does_not_exist_is_refused_at_create(store, master_factory, tiny_dir,
                                                           tmp_path, monkeypatch):
    """A missing bucket was found only at the first checkpoint: every trial failed and
    restarted until max_restarts. The master (and a --local run) refuse the experiment
    naming checkpoint_storage.bucket, and store nothing."""
    import yaml

    section, access = store
    for k, v in access.items():
        monkeypatch.setenv(k, v)
    master = master_factory(slots=1)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config["checkpoint_storage"] = dict(section, bucket="no-such-bucket")
    path = tmp_path / "missing-bucket.yaml"
    path.write_text(yaml.safe_dump(config))
    where = f" at {section['endpoint_url']}" if "endpoint_url" in section else ""
    expected = f"  - checkpoint_storage.bucket: bucket 'no-such-bucket' does not exist{where}"
    for extra in ([], ["--local"]):
        out = run_det(["-m", master.url, "e", "create", path, tiny_dir, *extra], timeout=180,
                      env={"DET_LOCAL_DIR": str(tmp_path / "local")})
        assert out.returncode == 1, out.stdout + out.stderr
        assert expected in out.stderr.splitlines()[-1] or expected in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
    listed = run_det(["-m", master.url, "e", "list", "-a", "--json"])
    assert listed.returncode == 0 and listed.stdout.strip() == "[]", listed.stdout
    # The bucket that exists is accepted (the check asks the store, it does not guess).
    config["checkpoint_storage"] = section
    path.write_text(yaml.safe_dump(config))
    out = run_det(["-m", master.url, "e", "create", path, tiny_dir, "--paused"], timeout=180)
    assert out.returncode == 0, out.stderr


def test_s3_credentials_the_bucket_refuses_are_refused_at_create(master_factory, tiny_dir,
                                                                 tmp_path, monkeypatch):
    """Keys the bucket refuses (403) were found only at the first checkpoint; the
    master (and a --local run) refuse the experiment naming the bucket and saying the
    config's credentials were refused. An S3 server that checks credentials: moto."""
    import yaml

    from object_store_testing import s3_server_with_auth

    for k, v in NO_AMBIENT_CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    master = master_factory(slots=1)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    path = tmp_path / "refused.yaml"
    with s3_server_with_auth(str(tmp_path)) as sections:
        url = sections["allowed"]["endpoint_url"]
        for name, code in (("wrong_secret", "SignatureDoesNotMatch"),
                           ("unknown_key", "InvalidAccessKeyId"),
                           ("no_policy", "AccessDenied")):
            config["checkpoint_storage"] = sections[name]
            path.write_text(yaml.safe_dump(config))
            for extra in ([], ["--local"]):
                out = run_det(["-m", master.url, "e", "create", path, tiny_dir, *extra],
                              timeout=180, env={"DET_LOCAL_DIR": str(tmp_path / "local")})
                assert out.returncode == 1, out.stdout + out.stderr
                assert (f"  - checkpoint_storage.bucket: bucket '{BUCKET}' at {url} refused "
                        "the credentials checkpoint_storage.access_key/secret_key "
                        f"({code} (HTTP 403): ") in out.stderr, (name, extra, out.stderr)
                assert "Traceback" not in out.stderr
        listed = run_det(["-m", master.url, "e", "list", "-a", "--json"])
        assert listed.returncode == 0 and listed.stdout.strip() == "[]", listed.stdout
        config["checkpoint_storage"] = sections["allowed"]  # keys the bucket accepts
        path.write_text(yaml.safe_dump(config))
        out = run_det(["-m", master.url, "e", "create", path, tiny_dir, "--paused"],
                      timeout=180)
        assert out.returncode == 0, out.stderr


def test_s3_credentials_from_the_environment_the_bucket_refuses_are_refused_at_create(
        master_factory, tiny_dir, tmp_path, monkeypatch):
    """A config without keys: the trials on the master's machine (and --local) use the
    credentials of its environment. Those the bucket refuses are refused at create, the
    message saying they came from the environment; those it accepts are used."""
    import yaml

    from object_store_testing import s3_server_with_auth

    for k, v in NO_AMBIENT_CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    path = tmp_path / "env-keys.yaml"
    with s3_server_with_auth(str(tmp_path)) as sections:
        url = sections["allowed"]["endpoint_url"]
        config["checkpoint_storage"] = {"type": "s3", "bucket": BUCKET, "endpoint_url": url}
        path.write_text(yaml.safe_dump(config))
        for name, code in (("wrong_secret", "SignatureDoesNotMatch"),
                           ("no_policy", "AccessDenied"),
                           ("allowed", None)):
            monkeypatch.setenv("AWS_ACCESS_KEY_ID", sections[name]["access_key"])
            monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", sections[name]["secret_key"])
            monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
            master = master_factory(slots=1)  # started with these in its environment
            for extra in ([], ["--local"]):
                if code is None:  # accepted: created (paused), and --local not run here
                    if extra:
                        continue
                    extra = ["--paused"]
                out = run_det(["-m", master.url, "e", "create", path, tiny_dir, *extra],
                              timeout=180, env={"DET_LOCAL_DIR": str(tmp_path / "local")})
                if code is None:
                    assert out.returncode == 0, out.stderr
                    continue
                assert out.returncode == 1, out.stdout + out.stderr
                assert (f"  - checkpoint_storage.bucket: bucket '{BUCKET}' at {url} refused "
                        "the credentials from the environment (AWS_ACCESS_KEY_ID/"
                        "AWS_SECRET_ACCESS_KEY; the config gives no checkpoint_storage."
                        f"access_key/secret_key) ({code} (HTTP 403): ") in out.stderr, (
                            name, extra, out.stderr)
                assert "Traceback" not in out.stderr
            master.stop()
            if name == "wrong_secret":
                # Trials only on remote agents: their credentials may differ from the
                # master's environment's, so these tell nothing about them.
                remote_only = master_factory(slots=0)
                out = run_det(["-m", remote_only.url, "e", "create", path, tiny_dir,
                               "--paused"], timeout=180)
                assert out.returncode == 0, out.stderr
                remote_only.stop()


def test_trial_sigkilled_while_it_uploads_to_s3_resumes_from_complete_ones(
        master_factory, tiny_dir, tmp_path, monkeypatch):
    """A trial checkpointing to S3 after every batch (uploads are most of its time, so a
    SIGKILL mostly lands in one), killed 4 times: each restart restores a complete
    checkpoint, every COMPLETED record has its objects, no objects lack a record, and
    every training row is stored once."""
    for k, v in NO_AMBIENT_CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    with s3_server(str(tmp_path)) as section:
        section = dict(section, prefix="exp", save_trial_latest=1000, save_trial_best=1000,
                       save_experiment_best=1000)
        master = master_factory(slots=1)
        config = {
            "entrypoint": "model_def:TinyTrial", "scheduling_unit": 1,
            "min_checkpoint_period": {"batches": 1}, "min_validation_period": {"batches": 40},
            "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2},
            "searcher": {"name": "single", "metric": "validation_loss",
                         "max_length": {"batches": 80}},
            "max_restarts": 6, "checkpoint_storage": section,
        }
        with master.client() as api:
            exp_id = create_experiment(api, config, tiny_dir)

            def batches():
                trials = api.get(f"/experiments/{exp_id}/trials").json()["trials"]
                return trials[0]["total_batches"] if trials else 0

            killed = []
            for _ in range(4):
                wait_until(lambda: trial_pid(master.data_dir, exp_id, 1) not in (None, *killed),
                           what="the trial process to (re)start")
                start = batches()
                wait_until(lambda: batches() >= start + 5, what="training to go on")
                pid = trial_pid(master.data_dir, exp_id, 1)
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
            assert exp["state"] == "COMPLETED", exp
            (trial,) = exp["trials"]
            assert trial["restarts"] == 4 and trial["total_batches"] == 80, trial
            metrics = api.get(f"/trials/{trial['id']}").json()["metrics"]
            listed = api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
        assert [m["total_batches"] for m in metrics if m["kind"] == "training"] == \
            list(range(1, 81))
        assert [m["total_batches"] for m in metrics if m["kind"] == "validation"] == [40, 80]
        present = set(build_storage(section).list_checkpoints())
        completed = {c["uuid"] for c in listed if c["state"] == "COMPLETED"}
        assert completed <= present, "COMPLETED checkpoints without their objects"
        assert present <= {c["uuid"] for c in listed}, "objects of unrecorded checkpoints"
