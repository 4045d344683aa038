"""The script-trial wrapper (``harness._script_trial.run_script``) with real child
processes: reports relayed to its host, exit codes, stops and kills, the environment."""

import json
import os
import signal
import sys
import textwrap
import threading
import time

import pytest

from determined.config import Length
from determined.errors import InvalidModelDefError
from determined.harness import InProcessHost, OpKind, TrialEnv, TrialOp
from determined.harness._script_link import connect
from determined.harness._script_trial import run_script, run_script_part

pytestmark = pytest.mark.timeout(120)

_LINK_SCRIPT = '''
import json, os, sys, time
from determined.harness import OpKind
from determined.harness._script_link import connect

link = connect()
host = link.host
seen = {"env": {k: os.environ.get(k) for k in ("DET_TRIAL_ID", "DET_EXPERIMENT_ID",
                                                 "DET_HPARAMS", "DET_LATEST_CHECKPOINT",
                                                 "DET_RANK")},
        "cwd": os.getcwd(), "executable": sys.executable, "ops": []}
steps = 0
while True:
    op = host.next_operation()
    seen["ops"].append(op.kind.value)
    if op.kind is OpKind.CLOSE:
        break
    if op.kind is OpKind.TRAIN:
        while steps < op.length.units:
            steps += 1
            host.report_training(steps, {"avg_metrics": {"loss": 1 / steps},
                                         "batch_metrics": [], "num_inputs": 0})
            host.report_progress(steps)
        with link.storage.store_path("ckpt-" + str(steps)) as path:
            open(os.path.join(path, "state.json"), "w").write(json.dumps({"steps": steps}))
        host.report_checkpoint(steps, "ckpt-" + str(steps), {"steps_completed": steps})
    elif op.kind is OpKind.VALIDATE:
        host.report_validation_completing_op(steps, {"validation_metrics": {"loss": 1 / steps},
                                                     "num_inputs": 0})
seen["best"] = host.is_best_validation(-1.0)
seen["recorded"] = sorted(host.recorded_checkpoints() or [])
print("script output line", flush=True)
open(os.path.join(os.environ["OUT_DIR"], "seen.json"), "w").write(json.dumps(seen))
sys.exit(int(link.env.hparams.get("code", 0)))
'''


def _env(tmp_path, entrypoint, hparams=None, latest=None):
    model_dir = tmp_path / "model"
    model_dir.mkdir(exist_ok=True)
    config = {"entrypoint": entrypoint, "searcher": {"metric": "loss"}}
    return TrialEnv(config, dict(hparams or {}), str(model_dir), experiment_id=3, trial_id=7,
                    latest_checkpoint=latest)


def _write(tmp_path, name, text):
    path = tmp_path / "model"
    path.mkdir(exist_ok=True)
    (path / name).write_text(textwrap.dedent(text))


def _storage(tmp_path):
    return {"type": "shared_fs", "host_path": str(tmp_path / "ckpts")}


@pytest.fixture
def out_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("OUT_DIR", str(tmp_path))
    monkeypatch.setenv("DET_RANK", "0")  # the trial process's rank: the script gets none
    return tmp_path


def test_script_reports_reach_the_host_and_exit_code_is_returned(tmp_path, out_dir, capfd):
    _write(tmp_path, "train.py", _LINK_SCRIPT)
    host = InProcessHost([TrialOp(OpKind.TRAIN, Length.from_dict({"batches": 3})),
                          TrialOp(OpKind.VALIDATE)])
    env = _env(tmp_path, "python3 train.py --flag", {"lr": 0.5, "code": 0},
               latest=str(tmp_path / "ckpts" / "abc-uuid"))
    assert run_script(env, host, _storage(tmp_path)) == 0
    assert [b for b, _ in host.training] == [1, 2, 3]
    # Progress read in one round is forwarded once, as its largest value (the hosts'
    # rule), so the host sees an increasing selection ending at the last.
    assert host.progress[-1] == 3.0 and host.progress == sorted(set(host.progress))
    assert host.validations == [(3, {"validation_metrics": {"loss": 1 / 3}, "num_inputs": 0})]
    assert host.searcher_validations == [(3, {"validation_metrics": {"loss": 1 / 3}})]
    assert [(b, u) for b, u, _ in host.checkpoints] == [(3, "ckpt-3")]
    assert os.path.isfile(tmp_path / "ckpts" / "ckpt-3" / "state.json")
    assert host.script_exit_code == 0
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["ops"] == ["train", "validate", "close"]
    assert seen["env"] == {"DET_TRIAL_ID": "7", "DET_EXPERIMENT_ID": "3",
                           "DET_HPARAMS": json.dumps({"lr": 0.5, "code": 0}),
                           "DET_LATEST_CHECKPOINT": "abc-uuid", "DET_RANK": None}
    assert seen["cwd"] == str(tmp_path / "model")
    assert seen["executable"] == sys.executable  # `python3` ran this process's Python
    assert seen["best"] is True and seen["recorded"] == []
    assert "script output line" in capfd.readouterr().out  # the trial's own output


def test_nonzero_exit_is_returned_and_reported(tmp_path, out_dir):
    _write(tmp_path, "train.py", _LINK_SCRIPT)
    host = InProcessHost([TrialOp(OpKind.TRAIN, Length.from_dict({"batches": 1}))])
    assert run_script(_env(tmp_path, ["python", "train.py"], {"code": 3}), host,
                      _storage(tmp_path)) == 3
    assert host.script_exit_code == 3 and [b for b, _ in host.training] == [1]


def test_killed_script_exits_128_plus_signal(tmp_path, out_dir):
    _write(tmp_path, "die.py", """
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    host = InProcessHost([])
    assert run_script(_env(tmp_path, "python3 die.py"), host, _storage(tmp_path)) == 137
    assert host.script_exit_code == -signal.SIGKILL


def test_stop_is_passed_to_the_script_which_checkpoints_and_exits(tmp_path, out_dir):
    _write(tmp_path, "loop.py", """
        import time
        from determined.harness._script_link import connect
        link = connect()
        steps = 0
        while not link.host.should_stop():
            steps += 1
            link.host.report_training(steps, {"avg_metrics": {}, "batch_metrics": [],
                                              "num_inputs": 0})
            time.sleep(0.05)
        link.host.report_checkpoint(steps, "stopped-ckpt", {})
    """)
    host = InProcessHost([], stop_after_workloads=5)
    assert run_script(_env(tmp_path, "python3 loop.py"), host, _storage(tmp_path)) == 0
    assert host.checkpoints[-1][1] == "stopped-ckpt"
    assert len(host.training) >= 5 and host.script_exit_code == 0


def test_script_ignoring_a_stop_gets_sigterm_then_the_trial_exits_0(tmp_path, out_dir,
                                                                     monkeypatch):
    monkeypatch.setenv("DET_SCRIPT_STOP_GRACE", "0.5")
    _write(tmp_path, "stubborn.py", """
        import os, signal, subprocess, sys, time
        # A grandchild in the script's process group goes with it.
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open(os.environ["OUT_DIR"] + "/grandchild", "w").write(str(child.pid))
        from determined.harness._script_link import connect
        link = connect()
        link.host.report_training(1, {"avg_metrics": {}, "batch_metrics": [], "num_inputs": 0})
        while True:
            time.sleep(0.1)
    """)
    host = InProcessHost([], stop_after_workloads=1)
    started = time.monotonic()
    assert run_script(_env(tmp_path, "python3 stubborn.py"), host, _storage(tmp_path)) == 0
    assert time.monotonic() - started < 30
    assert host.script_exit_code == 0  # stopped as asked: the trial resumes later
    grandchild = int((tmp_path / "grandchild").read_text())
    deadline = time.monotonic() + 60
    while _alive(grandchild):
        assert time.monotonic() < deadline, "the script's grandchild outlived it"
        time.sleep(0.1)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_plain_script_without_the_link_runs_too(tmp_path, out_dir):
    _write(tmp_path, "plain.py", """
        import os, sys
        open(os.environ["OUT_DIR"] + "/plain", "w").write(os.environ["DET_HPARAMS"])
        sys.exit(0)
    """)
    host = InProcessHost([])
    assert run_script(_env(tmp_path, "python3 plain.py", {"a": 1}), host,
                      _storage(tmp_path)) == 0
    assert json.loads((tmp_path / "plain").read_text()) == {"a": 1}


def test_missing_command_is_a_clear_user_error(tmp_path, out_dir):
    with pytest.raises(InvalidModelDefError, match="entrypoint: cannot run './nope.sh'"):
        run_script(_env(tmp_path, "./nope.sh --x"), InProcessHost([]), _storage(tmp_path))


def _sigterm_when_ready(tmp_path):
    """Write wait.py (it notes a SIGTERM, then exits 5) and SIGTERM this process once it
    runs."""
    _write(tmp_path, "wait.py", """
        import os, signal, sys, time
        def bye(*_):
            open(os.environ["OUT_DIR"] + "/got-sigterm", "w").write("yes")
            sys.exit(5)
        signal.signal(signal.SIGTERM, bye)
        open(os.environ["OUT_DIR"] + "/ready", "w").write("1")
        while True:
            time.sleep(0.1)
    """)

    def terminate_when_ready():
        while not (tmp_path / "ready").exists():
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=terminate_when_ready, daemon=True).start()


def test_sigterm_to_the_trial_process_reaches_the_script(tmp_path, out_dir):
    _sigterm_when_ready(tmp_path)
    host = InProcessHost([])
    code = run_script(_env(tmp_path, "python3 wait.py"), host, _storage(tmp_path))
    assert code == 128 + signal.SIGTERM
    assert (tmp_path / "got-sigterm").read_text() == "yes" and host.script_exit_code == 5


_MACHINE = {"container_addrs": ["10.0.0.5", "10.0.0.6"], "container_rank": 1,
            "container_slot_counts": [2, 2]}


def test_a_part_runs_the_script_without_a_link_told_its_machine(tmp_path, out_dir, monkeypatch):
    monkeypatch.setenv("DET_SCRIPT_LINK", "/inherited/link")  # the script must not see it
    monkeypatch.setenv("DET_SLOT_IDS", "0,1")
    _write(tmp_path, "part.py", """
        import json, os, sys
        import determined as det
        from determined.harness._script_link import connect
        info = det.get_cluster_info()
        json.dump({"link": connect() is None, "rank": info.container_rank,
                   "addrs": info.container_addrs, "slots": info.slot_ids,
                   "hparams": info.trial.hparams, "det_rank": os.environ.get("DET_RANK")},
                  open(os.environ["OUT_DIR"] + "/part.json", "w"))
        sys.exit(3)
    """)
    env = _env(tmp_path, "python3 part.py", {"lr": 0.5})
    assert run_script_part(env, _storage(tmp_path), None, _MACHINE) == 3
    seen = json.loads((tmp_path / "part.json").read_text())
    assert seen == {"link": True, "rank": 1, "addrs": ["10.0.0.5", "10.0.0.6"],
                    "slots": [0, 1], "hparams": {"lr": 0.5}, "det_rank": None}


def test_sigterm_to_a_part_reaches_its_script(tmp_path, out_dir):
    _sigterm_when_ready(tmp_path)
    code = run_script_part(_env(tmp_path, "python3 wait.py"), _storage(tmp_path), None, _MACHINE)
    assert code == 128 + signal.SIGTERM
    assert (tmp_path / "got-sigterm").read_text() == "yes"


def test_connect_outside_a_trial_is_none(monkeypatch):
    monkeypatch.delenv("DET_SCRIPT_LINK", raising=False)
    assert connect() is None


def test_sigkilled_trial_process_takes_the_scripts_process_group_along(tmp_path, out_dir):
    """A kill of the trial process alone (the local driver's, or an agent's killpg of
    the trial's group): the script and what it started go too."""
    _write(tmp_path, "spawner.py", """
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open(os.environ["OUT_DIR"] + "/pids", "w").write(f"{os.getpid()} {child.pid}")
        while True:
            time.sleep(0.1)
    """)
    (tmp_path / "wrapper.py").write_text(textwrap.dedent(f"""
        from determined.harness import InProcessHost, TrialEnv
        from determined.harness._script_trial import run_script, run_script_part
        env = TrialEnv({{"entrypoint": "python3 spawner.py"}}, {{}}, {str(tmp_path / "model")!r})
        run_script(env, InProcessHost([]), {{"type": "shared_fs", "host_path": "/tmp"}})
    """))
    import subprocess

    wrapper = subprocess.Popen([sys.executable, str(tmp_path / "wrapper.py")],
                               start_new_session=True)
    pids = tmp_path / "pids"
    deadline = time.monotonic() + 60
    while not (pids.exists() and pids.read_text()):
        assert wrapper.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    script, grandchild = map(int, pids.read_text().split())
    os.killpg(wrapper.pid, signal.SIGKILL)  # as an agent kills a trial
    wrapper.wait()
    deadline = time.monotonic() + 20
    while _alive(script) or _alive(grandchild):
        assert time.monotonic() < deadline, "the script's group outlived its trial process"
        time.sleep(0.1)


class _SlowHost(InProcessHost):
    """A host that takes ``delay`` seconds per call of training reports (a busy driver
    or master), so the script's reports pile up on its link."""

    def __init__(self, delay):
        super().__init__([])
        self.delay = delay
        self.training_calls = 0

    def report_training_batch(self, reports):
        self.training_calls += 1
        time.sleep(self.delay)
        super().report_training_batch(reports)


def test_reports_piled_up_when_the_script_is_sigkilled_all_reach_the_host(tmp_path, out_dir):
    _write(tmp_path, "burst.py", """
        import os, signal, time
        from determined.harness._script_link import connect
        link = connect()
        for step in range(1, 3002):
            if step == 3001:  # the wrapper is now most likely in a host call
                time.sleep(0.1)
            link.host.report_training(step, {"avg_metrics": {"loss": 1.0 / step},
                                             "batch_metrics": [], "num_inputs": 0})
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    host = _SlowHost(0.2)
    assert run_script(_env(tmp_path, "python3 burst.py"), host, _storage(tmp_path)) == 137
    assert [b for b, _ in host.training] == list(range(1, 3002))
    # Forwarded in batches: a call per round of reading the link, not per report.
    assert host.training_calls < 100


def test_a_report_the_host_refuses_raises_at_the_scripts_next_request(tmp_path, out_dir):
    _write(tmp_path, "refused.py", """
        import os
        from determined.errors import ReportError
        from determined.harness._script_link import connect
        link = connect()
        link.host.report_training(1, {"avg_metrics": {}, "batch_metrics": [], "num_inputs": 0})
        try:
            link.host.is_best_validation(0.5)
        except ReportError as e:
            open(os.environ["OUT_DIR"] + "/refused", "w").write(str(e))
        link.host.report_training(2, {"avg_metrics": {}, "batch_metrics": [], "num_inputs": 0})
        print("best:", link.host.is_best_validation(0.5))  # answered again once told
    """)

    class Refusing(InProcessHost):
        def report_training(self, batches_trained, metrics):
            if batches_trained == 1:
                raise ValueError("step 1 is not welcome")
            super().report_training(batches_trained, metrics)

    host = Refusing([])
    assert run_script(_env(tmp_path, "python3 refused.py"), host, _storage(tmp_path)) == 0
    assert (tmp_path / "refused").read_text() == (
        "report_training_metrics: the trial's host rejected a report: "
        "ValueError: step 1 is not welcome")
    assert [b for b, _ in host.training] == [2] and host.script_exit_code == 0
