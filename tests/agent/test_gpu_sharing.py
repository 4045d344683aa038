"""Several trials per GPU and GPU metrics, end to end without a GPU.

Real masters, agents and trial processes; the only stand-in is the third-party NVML
binding (``tests/fixtures/fake_nvml/pynvml.py`` first on the agent's PYTHONPATH), which
describes two 16 GiB GPUs. The agent offers 2 slots per GPU: trials see only their GPU,
get half its memory, and their GPU's readings flow agent -> master -> database -> REST
API -> ``det``. A CPU agent beside it shows no GPU anything.
"""

import pathlib
import sys

import httpx
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from agent_testing import AgentCluster, AgentProcess, trial_logs  # noqa: E402
from det_cli_testing import run_det  # noqa: E402
from gpu_testing import (  # noqa: E402
    GIB,
    env_config,
    env_model_dir,
    fake_gpus,
    fake_nvml_env,
    trial_gpu_env,
    trial_slots,
)
from master_testing import (  # noqa: E402
    ConfiguredMasterProcess,
    create_experiment,
    wait_for_state,
    wait_until,
)

pytestmark = pytest.mark.e2e

INTERVAL = "0.2"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu-pack")
    with AgentCluster(root, {"resource_manager": {"slots": 0}}) as c:
        gpu = AgentProcess(c.master.url, "gpu-agent", root, slots=None, label="gpu",
                           extra_args=["--slots-per-gpu", "2", "--gpu-metrics-interval",
                                       INTERVAL],
                           env=fake_nvml_env(fake_gpus(2))).start()
        cpu = AgentProcess(c.master.url, "cpu-agent", root, slots=2, label="cpu",
                           env=fake_nvml_env(None)).start()
        c.agents.update({"gpu-agent": gpu, "cpu-agent": cpu})
        wait_until(lambda: {"gpu-agent", "cpu-agent"} <= set(c.agent_ids()), 60,
                   "both agents to register")
        c.api = c.master.client()
        c.model = env_model_dir(root)
        yield c
        c.api.close()


def _agents(cluster):
    return {a["id"]: a for a in cluster.api.get("/agents").json()["agents"]}


def test_agent_offers_slots_per_gpu_and_lists_the_gpu_of_each_slot(cluster):
    agents = _agents(cluster)
    gpu, cpu = agents["gpu-agent"], agents["cpu-agent"]
    assert gpu["slots"] == 4
    assert [s["gpu"]["index"] for s in gpu["slot_tasks"]] == ["0", "0", "1", "1"]
    assert {s["gpu"]["uuid"] for s in gpu["slot_tasks"][:2]} == {"GPU-fake-0"}
    assert [(g["index"], g["name"], g["memory_total"], g["slots"]) for g in gpu["gpus"]] == [
        ("0", "Fake GPU 9000", 16 * GIB, 2), ("1", "Fake GPU 9000", 16 * GIB, 2)]
    assert cpu["gpus"] == [] and all(s["gpu"] is None for s in cpu["slot_tasks"])

    env = {"DET_MASTER": cluster.master.url, "COLUMNS": "200"}
    out = run_det(["slot", "list"], env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "gpu_memory" in lines[0], out.stdout
    gpu_rows = [l for l in lines if l.startswith("gpu-agent")]
    assert len(gpu_rows) == 4 and all("Fake GPU 9000" in l and "16.0 GiB" in l
                                      for l in gpu_rows), out.stdout
    assert sum("0: Fake GPU 9000" in l for l in gpu_rows) == 2, out.stdout
    assert all("Fake" not in l for l in lines if l.startswith("cpu-agent")), out.stdout

    out = run_det(["agent", "list"], env=env)
    assert out.returncode == 0, out.stderr
    row = next(l for l in out.stdout.splitlines() if l.startswith("gpu-agent"))
    assert [c.strip() for c in row.split("|")][-3:] == ["2x Fake GPU 9000", "16.0 GiB", "2"], \
        out.stdout
    cpu_row = next(l for l in out.stdout.splitlines() if l.startswith("cpu-agent"))
    assert "Fake" not in cpu_row and "GiB" not in cpu_row, out.stdout


def test_trials_sharing_a_gpu_see_it_with_half_its_memory_and_report_gpu_metrics(cluster):
    exp_id = create_experiment(cluster.api, env_config(trials=3, label="gpu"), cluster.model)
    exp = wait_for_state(cluster.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], 300)
    assert exp["state"] == "COMPLETED", exp
    by_slot = [s["gpu"] for s in _agents(cluster)["gpu-agent"]["slot_tasks"]]
    trials = cluster.api.get(f"/experiments/{exp_id}/trials").json()["trials"]
    assert len(trials) == 3
    for t in trials:
        log = trial_logs(cluster.api, t["id"])
        (slot,) = trial_slots(log)
        gpu = by_slot[slot]
        env = trial_gpu_env(log)
        assert env["CUDA_VISIBLE_DEVICES"] == gpu["index"], (slot, env)
        assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
        assert env["DET_GPU_MEMORY_FRACTION"] == "0.5" and env["DET_SLOTS_PER_GPU"] == "2"
        assert f"GPU {gpu['index']} is shared by 2 slots; this trial may use 50% of its " \
               "memory" in log

        samples = cluster.api.get(f"/trials/{t['id']}/gpu-metrics").json()["gpu_metrics"]
        assert samples, f"no GPU samples for trial {t['id']}"
        assert {(s["gpu_index"], s["gpu_uuid"], s["memory_total"]) for s in samples} == {
            (int(gpu["index"]), gpu["uuid"], 16 * GIB)}
        assert all(0 <= s["utilization"] <= 100 and s["memory_used"] > 0 for s in samples)
        assert [s["time"] for s in samples] == sorted(s["time"] for s in samples)

    out = run_det(["trial", "gpu-metrics", str(trials[0]["id"])],
                  env={"DET_MASTER": cluster.master.url})
    assert out.returncode == 0, out.stderr
    assert "GPU-fake-" in out.stdout and "16.0 GiB" in out.stdout, out.stdout


def test_trial_over_its_gpu_memory_cap_fails_naming_cap_and_option(cluster):
    exp_id = create_experiment(cluster.api, env_config(trials=1, label="gpu", oom_at_batch=3),
                               cluster.model)
    exp = wait_for_state(cluster.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], 300)
    assert exp["state"] == "ERROR", exp
    log = trial_logs(cluster.api, exp["trials"][0]["id"])
    assert "ran out of GPU memory under its cap of 50% of GPU" in log, log[-3000:]
    assert "--slots-per-gpu" in log and "resource_manager.slots_per_gpu" in log
    assert "--gpu-memory-fraction" in log


def test_trials_without_gpus_get_no_gpu_environment_and_no_samples(cluster):
    exp_id = create_experiment(cluster.api, env_config(trials=1, label="cpu"), cluster.model)
    exp = wait_for_state(cluster.api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], 300)
    assert exp["state"] == "COMPLETED", exp
    trial_id = exp["trials"][0]["id"]
    env = trial_gpu_env(trial_logs(cluster.api, trial_id))
    assert env == {k: 0 if k == "torch_devices" else None for k in env}, env
    assert cluster.api.get(f"/trials/{trial_id}/gpu-metrics").json() == {"gpu_metrics": []}
    out = run_det(["trial", "gpu-metrics", str(trial_id)], env={"DET_MASTER": cluster.master.url})
    assert out.returncode == 0 and "no GPU samples" in out.stdout, out.stdout + out.stderr


def test_gpu_metrics_of_an_unknown_trial_is_404(cluster):
    r = cluster.api.get("/trials/99999/gpu-metrics")
    assert r.status_code == 404, r.text
    assert "99999" in r.text


def test_embedded_agent_packs_trials_onto_its_gpu(tmp_path):
    """The master's own agent: ``resource_manager.slots_per_gpu: 2`` on one (stand-in) GPU
    makes 2 slots; both trials run on GPU 0 with half its memory, and it samples them."""
    import subprocess

    data = tmp_path / "master"
    data.mkdir()
    master = ConfiguredMasterProcess(str(data), {"resource_manager": {
        "slots_per_gpu": 2, "gpu_metrics_interval": float(INTERVAL)}})
    env = fake_nvml_env(fake_gpus(1, memory_gib=24, name="Fake Embedded GPU"))
    master.proc = None
    log = open(data / "master-test.log", "ab")
    master.proc = subprocess.Popen(master.command(), stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, env=env)
    try:
        wait_until(lambda: _up(master.url), 120, "the master to start")  # a loaded machine
        with master.client() as api:
            (agent,) = api.get("/agents").json()["agents"]
            assert agent["type"] == "embedded" and agent["slots"] == 2, agent
            assert [s["gpu"]["name"] for s in agent["slot_tasks"]] == ["Fake Embedded GPU"] * 2
            exp_id = create_experiment(api, env_config(trials=2, sleep=0.1),
                                       env_model_dir(tmp_path))
            exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], 300)
            assert exp["state"] == "COMPLETED", (exp, master.log())
            for t in exp["trials"]:
                log_text = trial_logs(api, t["id"])
                env_seen = trial_gpu_env(log_text)
                assert env_seen["CUDA_VISIBLE_DEVICES"] == "0", env_seen
                assert env_seen["DET_GPU_MEMORY_FRACTION"] == "0.5", env_seen
                samples = api.get(f"/trials/{t['id']}/gpu-metrics").json()["gpu_metrics"]
                assert samples and {s["memory_total"] for s in samples} == {24 * GIB}
    finally:
        master.stop()


def _up(url: str) -> bool:
    try:
        return httpx.get(url + "/api/v1/master", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_bad_gpu_reports_of_an_agent_are_4xx_naming_the_field(cluster):
    url = cluster.master.url + "/api/v1/agents/odd-agent"
    gpu = {"index": "0", "uuid": "GPU-x", "name": "X", "memory_total": GIB}
    r = httpx.post(url + "/register", json={"slots": 2, "slot_gpus": [gpu]}, timeout=30)
    assert r.status_code in (400, 422) and "slot_gpus" in r.text, r.text
    session = httpx.post(url + "/register", timeout=30,
                         json={"slots": 1, "slot_gpus": [gpu], "protocol": 1}).json()["session"]
    try:
        bad = {"time": 1.0, "gpu_index": 0, "utilization": 170, "memory_used": 1,
               "memory_total": 2}
        r = httpx.post(url + "/events", json={"session": session,
                                              "gpu_metrics": {"x": [bad]}}, timeout=30)
        assert r.status_code in (400, 422) and "utilization" in r.text, r.text
    finally:
        httpx.post(url + "/deregister", json={"session": session}, timeout=30)
