"""What a new user reads running ``det experiment create --local`` (and ``--test``) at
80 columns: warnings once, short trial log lines, Ctrl-C's way back, a repeated
failure's traceback once, naming the user's own files, as written."""

import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import yaml

from det_cli_testing import run_det, run_det_in_terminal, trial_started, wait_while_running

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "master"))
from master_testing import SLOW_TRIAL  # noqa: E402

COLUMNS_80 = {"COLUMNS": "80", "LINES": "24"}

NO_VALIDATION_LOSS = '''from model_def import TinyTrial


class Renamed(TinyTrial):
    """Reports its loss as ``vloss``: no ``validation_loss`` (the default metric)."""

    def evaluate_batch(self, batch):
        metrics = super().evaluate_batch(batch)
        return {"vloss": metrics.pop("validation_loss"), **metrics}
'''


def _model_dir(tiny_dir, parent: pathlib.Path) -> pathlib.Path:
    """A copy of tests/fixtures/tiny_pytorch (plus ``slow_def`` and ``renamed_def``)."""
    path = parent / "model"
    shutil.copytree(tiny_dir, path, ignore=shutil.ignore_patterns("__pycache__"))
    (path / "slow_def.py").write_text(SLOW_TRIAL)
    (path / "renamed_def.py").write_text(NO_VALIDATION_LOSS)
    return path


def _config(tmp_path, model_dir, **changes):
    cfg = yaml.safe_load((model_dir / "const.yaml").read_text())
    for key, value in changes.items():
        cfg[key] = value
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_missing_searcher_metric_is_said_once(tmp_path, tiny_dir):
    model_dir = _model_dir(tiny_dir, tmp_path)
    # A partial config (no searcher metric: validation_loss by default) and two
    # validations (the initial one too): one warning, as a trial log line reads.
    partial = _config(tmp_path, model_dir, entrypoint="renamed_def:Renamed",
                      searcher={"max_length": {"batches": 1}},
                      perform_initial_validation=True)
    out = run_det(["e", "create", partial, model_dir, "--local", "--test"], env=COLUMNS_80)
    assert out.returncode == 0, out.stdout + out.stderr
    said = out.stdout + out.stderr
    # What the user wrote (a searcher without a metric) and the default assumed, once;
    # the runner's own wording ("the searcher metric 'validation_loss'") is not said.
    assert said.count("validation_loss") == 1 and "'validation_loss'" not in said, said
    assert re.search(r"^\d\d:\d\d:\d\d WARNING the config's searcher section sets no "
                     r"metric, so the searcher metric is assumed to be validation_loss \(the "
                     r"default\); the validation metrics lack it \(received: accuracy, "
                     r"vloss\)$", out.stderr, re.M), out.stderr
    assert "Model definition test succeeded" in said

    # No searcher section at all: the warning says so.
    cfg = yaml.safe_load(partial.read_text())
    del cfg["searcher"]
    partial.write_text(yaml.safe_dump(cfg))
    out = run_det(["e", "create", partial, model_dir, "--local", "--test"], env=COLUMNS_80)
    assert out.returncode == 0, out.stdout + out.stderr
    said = out.stdout + out.stderr
    assert said.count("validation_loss") == 1, said
    assert re.search(r"^\d\d:\d\d:\d\d WARNING the config has no searcher section, so the "
                     r"searcher metric is assumed to be validation_loss \(the default\); ",
                     out.stderr, re.M), out.stderr

    # A config naming a metric the trial lacks: the test fails saying so, once.
    named = _config(tmp_path, model_dir, searcher={
        "name": "single", "metric": "nope", "max_length": {"batches": 1}})
    out = run_det(["e", "create", named, model_dir, "--local", "--test"], env=COLUMNS_80)
    said = out.stdout + out.stderr
    assert out.returncode == 1 and said.count("the searcher metric 'nope'") == 1, said


def test_trial_log_lines_read_time_level_message(tmp_path, tiny_dir):
    local = tmp_path / "local"
    out = run_det(["e", "create", tiny_dir / "const.yaml", tiny_dir, "--local-dir", local,
                   "--no-progress"], env=COLUMNS_80)
    assert out.returncode == 0, out.stdout + out.stderr
    logs = run_det(["t", "logs", "1", "--local-dir", local], env=COLUMNS_80).stdout
    lines = [l for l in logs.splitlines() if " INFO " in l]
    assert lines, logs
    for line in lines:
        assert re.match(r"\d\d:\d\d:\d\d INFO \S", line), line
    assert any(re.match(r"\d\d:\d\d:\d\d INFO validation at 20 batches: validation_loss=", l)
               for l in lines), logs
    assert "[trial " not in logs and "," not in lines[0][:12], logs


def test_ctrl_c_pauses_and_says_how_to_resume(tmp_path, tiny_dir):
    model_dir = _model_dir(tiny_dir, tmp_path)
    config = _config(tmp_path, model_dir, entrypoint="slow_def:SlowTrial",
                     hyperparameters={"global_batch_size": 16, "lr": 0.1, "dropout": 0.2,
                                      "sleep": 0.02},
                     searcher={"name": "single", "metric": "validation_loss",
                               "max_length": {"batches": 400}},
                     min_checkpoint_period={"batches": 10})
    local = pathlib.Path(os.environ["DET_LOCAL_DIR"])  # the default directory: --local
    proc = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "e", "create", str(config), str(model_dir),
         "--local"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, env={**os.environ, **COLUMNS_80})
    ckpts = local / "checkpoints"
    wait_while_running(
        proc, lambda: ckpts.exists() and any(not p.name.startswith(".") for p in ckpts.iterdir()),
        "no checkpoint before Ctrl-C")
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 130, stdout + stderr
    assert "Interrupted: experiment 1 is PAUSED" in stdout, stdout + stderr
    assert "det: interrupted" not in stderr, stderr  # said once, by the run
    (command,) = [l for l in stdout.splitlines() if l.startswith("det experiment resume")]
    assert command == "det experiment resume --local 1", stdout
    described = run_det(["e", "describe", "1", "--local"]).stdout
    assert "PAUSED" in described, described

    # The command as printed continues it to its end.
    out = run_det(shlex.split(command)[1:], env=COLUMNS_80, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Experiment 1: COMPLETED" in out.stdout, out.stdout
    assert "resumed from checkpoint" in out.stdout, out.stdout
    out = run_det(["e", "describe", "1", "--local"])
    assert "COMPLETED" in out.stdout and "PAUSED" not in out.stdout, out.stdout


def test_ctrl_c_names_a_local_dir_that_is_not_the_default(tmp_path, tiny_dir):
    model_dir = _model_dir(tiny_dir, tmp_path)
    config = _config(tmp_path, model_dir, entrypoint="slow_def:SlowTrial",
                     hyperparameters={"global_batch_size": 16, "lr": 0.1, "dropout": 0.2,
                                      "sleep": 0.02},
                     searcher={"name": "single", "metric": "validation_loss",
                               "max_length": {"batches": 400}})
    local = tmp_path / "my runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "e", "create", str(config), str(model_dir),
         "--local-dir", str(local), "--slots", "2"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, **COLUMNS_80})
    log = local / "experiments" / "1" / "trials" / "1.log"
    wait_while_running(proc, lambda: trial_started(log), "the trial never started")
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=180)
    commands = [l for l in stdout.splitlines() if l.startswith("det experiment resume")]
    assert len(commands) == 1, stdout + stderr
    assert shlex.split(commands[0]) == ["det", "experiment", "resume", "--local-dir", str(local),
                                    "1", "--slots", "2"], stdout


def test_repeated_failure_prints_its_traceback_once_naming_the_users_file(tmp_path, tiny_dir):
    # A model directory whose path makes a traceback's File line longer than 80 columns.
    parent = tmp_path / ("a-model-directory-with-a-long-name-" * 2).rstrip("-")
    parent.mkdir()
    model_dir = _model_dir(tiny_dir, parent)
    config = _config(tmp_path, model_dir, max_restarts=2, hyperparameters={
        "global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "fail_at_batch": 3})
    local = tmp_path / "local"
    out = run_det(["e", "create", config, model_dir, "--local-dir", local], env=COLUMNS_80)
    assert out.returncode == 1, out.stdout + out.stderr
    text = out.stdout
    user_file = str(model_dir / "model_def.py")
    file_line = f'  File "{user_file}", line '
    assert len(file_line) > 80
    # Once, whole: its lines as the trial wrote them (not folded at 80 columns).
    assert text.count("Traceback (most recent call last):") == 1, text
    (line,) = [l for l in text.splitlines() if l.startswith(file_line)]
    assert line.endswith(", in train_batch"), text
    assert f"{user_file}: TinyTrial.train_batch raised ValueError: planned failure at " \
           "batch 3" in text.splitlines(), text
    assert "det-workdirs" not in text, text
    assert re.search(r"trial 1 failed again, the same way; restart 2, from the beginning",
                     text), text
    assert re.search(r"trial 1 failed again, the same way; no restarts left", text), text
    # The trial's log names the user's file too (the copy is gone once its process ended).
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout
    assert file_line in logs, logs
    assert [l for l in logs.splitlines() if "det-workdirs" in l and " runs in " not in l] \
        == [], logs


def test_test_mode_failure_prints_the_traceback_as_written_in_a_terminal(tmp_path, tiny_dir):
    """Error messages fold at a terminal's width; the user's traceback is not folded
    (its File line of 100 columns was cut into three at 80)."""
    parent = tmp_path / ("a-model-directory-with-a-long-name-" * 2).rstrip("-")
    parent.mkdir()
    model_dir = _model_dir(tiny_dir, parent)
    config = _config(tmp_path, model_dir, hyperparameters={
        "global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "fail_at_batch": 0})
    code, text = run_det_in_terminal(["e", "create", config, model_dir, "--local", "--test"],
                                     timeout=180.0)
    assert code == 1, text
    lines = text.replace("\r\n", "\n").splitlines()
    file_line = f'  File "{model_dir / "model_def.py"}", line '
    assert len(file_line) > 80
    assert [l for l in lines if l.startswith(file_line) and l.endswith(", in train_batch")], text
    assert text.count("Traceback (most recent call last):") == 1, text
    # The error follows its traceback, as Python's own, and says what failed.
    error_at = next(i for i, l in enumerate(lines) if l.startswith("det: error:"))
    assert error_at > next(i for i, l in enumerate(lines) if l.startswith("Traceback")), text
    assert "TinyTrial.train_batch raised ValueError: planned failure at batch 0" in \
        " ".join(lines[error_at:]), text


def test_a_failing_scripts_traceback_is_shown_once_naming_the_users_file(tmp_path):
    """A script trial's failure said only "Trial failed (exit code 1)" (its traceback,
    naming the copy under det-workdirs, was in the trial's log only)."""
    model_dir = tmp_path / "script"
    model_dir.mkdir()
    (model_dir / "train.py").write_text(
        "def main():\n    raise ValueError('oops in script')\n\n\nmain()\n")
    config = tmp_path / "script.yaml"
    config.write_text(yaml.safe_dump({
        "name": "failing-script", "entrypoint": "python3 train.py", "max_restarts": 1,
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}}}))
    out = run_det(["e", "create", config, model_dir, "--local-dir", tmp_path / "local"],
                  env=COLUMNS_80)
    assert out.returncode == 1, out.stdout + out.stderr
    text = out.stdout
    assert text.count("Traceback (most recent call last):") == 1, text
    assert f'  File "{model_dir / "train.py"}", line 2, in main' in text.splitlines(), text
    assert "ValueError: oops in script" in text.splitlines(), text
    assert "the script failed (exit code 1):" in text and "det-workdirs" not in text, text
    assert "trial 1 failed again, the same way; no restarts left" in text, text


def test_test_mode_script_output_names_the_users_file(tmp_path):
    """``--local --test`` runs a script in a temporary copy of its directory; its
    traceback named the copy (/tmp/det-test-mode-*/...), gone once the test ended."""
    model_dir = tmp_path / "script"
    model_dir.mkdir()
    (model_dir / "train.py").write_text(
        "import os\nprint('running in', os.getcwd())\n\n\n"
        "def main():\n    raise ValueError('oops in script')\n\n\nmain()\n")
    config = tmp_path / "script.yaml"
    config.write_text(yaml.safe_dump({
        "name": "failing-script", "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}}}))
    out = run_det(["e", "create", config, model_dir, "--local", "--test"], env=COLUMNS_80)
    assert out.returncode == 1, out.stdout + out.stderr
    assert f'  File "{model_dir / "train.py"}", line 6, in main' in out.stderr.splitlines(), \
        out.stderr
    assert "det-test-mode-" not in out.stderr, out.stderr
    # Where it runs is still said as it is: its outputs go there, not to the user's.
    (cwd,) = [l for l in out.stdout.splitlines() if l.startswith("running in ")]
    assert "det-test-mode-" in cwd, out.stdout
    # det-test-mode-<pid>.<start>.<pid namespace>-<random>: det's own (a sweep removes
    # it if det is killed); det removed it once the test ended
    copy = pathlib.Path(cwd[len("running in "):]).parent
    assert re.fullmatch(r"det-test-mode-\d+\.[0-9a-f]+\.[0-9a-f]+-[a-z0-9_]+", copy.name), cwd
    assert not copy.exists(), cwd
    assert "exited with code 1" in out.stderr, out.stderr


def test_ctrl_c_in_a_terminal_shows_the_trial_pausing_then_paused(tmp_path, tiny_dir):
    """While a trial finished its workload and checkpointed after Ctrl-C, the progress
    line read "1 running" and then, for good, "0 running"."""
    model_dir = _model_dir(tiny_dir, tmp_path)
    go = tmp_path / "go"  # the trial holds after 3 batches until it exists
    config = _config(tmp_path, model_dir, entrypoint="slow_def:SlowTrial",
                     hyperparameters={"global_batch_size": 16, "lr": 0.1, "dropout": 0.2,
                                      "sleep": 0.02, "hold_after": 3, "hold_file": str(go)},
                     searcher={"name": "single", "metric": "validation_loss",
                               "max_length": {"batches": 400}})
    seen = {"interrupted": False, "pausing": ""}

    def respond(text):
        if not seen["interrupted"] and "trial 1 started" in text:
            seen["interrupted"] = True
            time.sleep(1.0)  # into its training, which holds at batch 4
            return b"\x03"
        if not seen["pausing"]:
            frames = [f for f in re.split(r"[\r\n]", text) if f.startswith("search ")]
            pausing = [f for f in frames if "pausing" in f]
            if pausing:  # the trial goes on to its checkpoint
                seen["pausing"] = pausing[-1]
                go.touch()
        return None

    code, text = run_det_in_terminal(["e", "create", config, model_dir, "--local-dir",
                                      tmp_path / "local"], timeout=180.0, respond=respond)
    assert code == 130, text
    assert seen["pausing"].rstrip().endswith("1 pausing (checkpointing), 0 done"), text
    lines = text.splitlines()
    assert [l for l in lines if re.match(r"\d\d:\d\d:\d\d trial 1 pausing: it finishes its "
                                         r"workload and checkpoints", l)], text
    # The last progress line, left on the screen: the trial is paused, none runs.
    (last,) = [l for l in lines if l.startswith("search ")][-1:]
    assert last.rstrip().endswith("1 paused, 0 done") and "running" not in last, text
    assert "Interrupted: experiment 1 is PAUSED" in text, text


def test_no_progress_prints_a_failed_trials_error_as_with_progress(tmp_path, tiny_dir):
    model_dir = _model_dir(tiny_dir, tmp_path)
    config = _config(tmp_path, model_dir, max_restarts=1, hyperparameters={
        "global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "fail_at_batch": 3})
    said = {}
    for flags in ([], ["--no-progress"]):
        out = run_det(["e", "create", config, model_dir, "--local-dir",
                       tmp_path / f"local{len(flags)}", *flags], env=COLUMNS_80)
        assert out.returncode == 1, out.stdout + out.stderr
        # The failure's lines, from "trial 1 failed:" to the last of them (the time
        # of day each event line starts with aside).
        lines = [re.sub(r"^\d\d:\d\d:\d\d ", "", l) for l in out.stdout.splitlines()]
        start = lines.index("trial 1 failed:")
        end = lines.index("trial 1 failed again, the same way; no restarts left")
        said[bool(flags)] = [l for l in lines[start:end + 1] if not l.startswith("trial 1 started")]
    assert said[True] == said[False], said
    shown = "\n".join(said[True])
    assert "Traceback (most recent call last):" in shown, shown
    assert f'  File "{model_dir / "model_def.py"}", line ' in shown, shown
    assert "ValueError: planned failure at batch 3" in said[True], shown
    assert "trial 1: restart 1, from the beginning" in said[True], shown


def test_a_scripts_traceback_in_its_trial_log_names_the_users_file(tmp_path):
    """``det trial logs`` showed a script's own traceback naming the trial's working
    copy (/tmp/det-workdirs/...), gone once the trial ended; the rest of what the
    script wrote stays as written (here: where it ran, which is the copy)."""
    model_dir = tmp_path / "script"
    model_dir.mkdir()
    (model_dir / "train.py").write_text(
        "import os\nprint('running in', os.getcwd(), flush=True)\n\n\n"
        "def main():\n    raise ValueError('oops in ' + os.getcwd())\n\n\nmain()\n")
    config = tmp_path / "script.yaml"
    config.write_text(yaml.safe_dump({
        "name": "failing-script", "entrypoint": "python3 train.py", "max_restarts": 0,
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}}}))
    local = tmp_path / "local"
    out = run_det(["e", "create", config, model_dir, "--local-dir", local, "--no-progress"],
                  env=COLUMNS_80)
    assert out.returncode == 1, out.stdout + out.stderr
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout.splitlines()
    assert "Traceback (most recent call last):" in logs, logs
    frames = [l for l in logs if l.lstrip().startswith("File ")]
    assert frames == [f'  File "{model_dir / "train.py"}", line 9, in <module>',
                      f'  File "{model_dir / "train.py"}", line 6, in main'], logs
    # The script's own line saying where it ran stays as written; its exception's line
    # names the user's directory, as the web UI's log view and the run's output show it.
    (ran,) = [l for l in logs if l.startswith("running in ")]
    copy = ran[len("running in "):]
    assert "det-workdirs" in copy and copy != str(model_dir), logs
    assert f"ValueError: oops in {model_dir}" in logs, logs
    assert f"ValueError: oops in {model_dir}" in out.stdout.splitlines(), out.stdout


def test_a_script_that_exits_with_a_message_shows_the_message(tmp_path):
    """A script that failed without a traceback (``sys.exit("...")``, as the Lightning
    example does without its extra) showed only "Trial failed (exit code 1)": what it
    said was in ``det t logs`` alone."""
    model_dir = tmp_path / "script"
    model_dir.mkdir()
    (model_dir / "train.py").write_text(
        "import sys\nprint('loading data', flush=True)\n"
        "sys.exit('no data in ' + __file__ + ': run prepare.py first')\n")
    config = tmp_path / "script.yaml"
    config.write_text(yaml.safe_dump({
        "name": "exits-with-a-message", "entrypoint": "python3 train.py", "max_restarts": 1,
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}}}))
    out = run_det(["e", "create", config, model_dir, "--local-dir", tmp_path / "local"],
                  env=COLUMNS_80)
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    said = f"no data in {model_dir / 'train.py'}: run prepare.py first"
    assert "the script failed (exit code 1); its last output:" in lines, out.stdout
    assert lines.count("loading data") == 1 and lines.count(said) == 1, out.stdout
    assert "trial 1 failed again, the same way; no restarts left" in out.stdout, out.stdout
    assert "INFO" not in out.stdout, out.stdout


TWO_RANKS = """import os
import time


def load(rank):
    if rank == 1:
        raise ValueError("no shard at " + os.path.join(os.path.dirname(__file__), "s.csv"))
    time.sleep(30)


load(int(os.environ["RANK"]))
"""


def test_a_distributed_scripts_failure_shows_the_rank_that_failed(tmp_path):
    """A script under torchrun whose rank 1 failed: the run said only torchrun's own
    ``ChildFailedError`` traceback, and the trial log named the working copy in the
    rank's traceback (its lines start ``[rank=1] ``)."""
    model_dir = tmp_path / "script"
    model_dir.mkdir()
    (model_dir / "train.py").write_text(TWO_RANKS)
    config = tmp_path / "script.yaml"
    config.write_text(yaml.safe_dump({
        "name": "two-ranks", "max_restarts": 0, "resources": {"slots_per_trial": 2},
        "entrypoint": "python3 -m determined.launch.torch_distributed -- python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}}}))
    local = tmp_path / "local"
    out = run_det(["e", "create", config, model_dir, "--local-dir", local, "--slots", "2",
                   "--no-progress"], env=COLUMNS_80)
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    error = f"ValueError: no shard at {model_dir / 's.csv'}"
    assert "the script failed (exit code 1); its rank 1 failed first:" in lines, out.stdout
    assert f'  File "{model_dir / "train.py"}", line 11, in <module>' in lines, out.stdout
    assert error in lines and "ChildFailedError" not in out.stdout, out.stdout
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout.splitlines()
    assert f'[rank=1]   File "{model_dir / "train.py"}", line 7, in load' in logs, logs
    assert f"[rank=1] {error}" in logs, logs
    assert f"[determined] Trial failed (exit code 1): {error}; no restarts left " \
           "(0 of 0 restarts used)" in logs, logs


def test_the_hidden_hyperparameters_command_names_the_local_dir_it_ran_in(tmp_path, tiny_dir):
    """The summary's "2 more varying hyperparameters not shown: det e describe --local 1"
    named the default local directory after a run with ``--local-dir``: that command
    read another directory (or found no experiment 1)."""
    model_dir = _model_dir(tiny_dir, tmp_path)
    knob = {"type": "double", "minval": 0.0, "maxval": 1.0}
    config = _config(tmp_path, model_dir, hyperparameters={
        "global_batch_size": 16, "lr": {"type": "double", "minval": 0.05, "maxval": 0.1},
        "dropout": knob, "first_unused_knob": knob, "second_unused_knob": knob},
        searcher={"name": "random", "metric": "validation_loss", "max_trials": 2,
                  "max_length": {"batches": 1}}, min_validation_period={"batches": 1})
    local = tmp_path / "elsewhere"
    out = run_det(["e", "create", config, model_dir, "--local-dir", local, "--no-progress",
                   "--slots", "2"], env=COLUMNS_80)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    command = f"det e describe --local-dir {local} 1"
    assert "more varying hyperparameters not shown; see them with:" in \
        " ".join(l.strip() for l in lines), out.stdout
    assert command in lines, out.stdout  # whole, on a line of its own: it gets copied
    described = run_det(command.split()[1:])
    assert described.returncode == 0 and "second_unused_knob" in described.stdout, \
        described.stdout + described.stderr


def test_ctrl_c_with_no_progress_says_the_trial_is_pausing(tmp_path, tiny_dir):
    """With ``--no-progress`` nothing was said between Ctrl-C and "Interrupted: ...",
    however long the trials took to checkpoint: it looked hung (a second Ctrl-C then
    loses their work)."""
    model_dir = _model_dir(tiny_dir, tmp_path)
    go = tmp_path / "go"  # the trial holds after 3 batches until it exists
    config = _config(tmp_path, model_dir, entrypoint="slow_def:SlowTrial",
                     hyperparameters={"global_batch_size": 16, "lr": 0.1, "dropout": 0.2,
                                      "sleep": 0.02, "hold_after": 3, "hold_file": str(go)},
                     searcher={"name": "single", "metric": "validation_loss",
                               "max_length": {"batches": 400}})
    local = tmp_path / "local"
    log = local / "experiments" / "1" / "trials" / "1.log"
    seen = {"interrupted": 0.0}

    def respond(text):
        if not seen["interrupted"] and trial_started(log):
            seen["interrupted"] = time.monotonic()
            time.sleep(1.0)  # into its training, which holds at batch 4
            return b"\x03"
        # The trial goes on to its checkpoint once the pause is said (or it never is).
        if seen["interrupted"] and ("pausing" in text
                                    or time.monotonic() - seen["interrupted"] > 5):
            go.touch()
        return None

    code, text = run_det_in_terminal(["e", "create", config, model_dir, "--local-dir", local,
                                      "--no-progress"], timeout=180.0, respond=respond,
                                     idle=0.5)
    assert code == 130, text
    lines = text.splitlines()
    pausing = [i for i, l in enumerate(lines) if re.search(
        r"\d\d:\d\d:\d\d trial 1 pausing: it finishes its workload and checkpoints", l)]
    interrupted = [i for i, l in enumerate(lines) if "Interrupted: experiment 1 is PAUSED" in l]
    assert pausing and interrupted and pausing[0] < interrupted[0], text
    # The terminal's echo of Ctrl-C ("^C") stays on a line of its own.
    assert not re.search(r"\^C\S", text), text


def test_a_folded_event_line_goes_on_under_its_text(tmp_path, tiny_dir):
    """At 80 columns a long "trial 1 started: ..." line went on at the left edge, where
    the next event's time is: its end read as a line of its own."""
    model_dir = _model_dir(tiny_dir, tmp_path)
    config = _config(tmp_path, model_dir, hyperparameters={
        "global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "first_unused_knob": 0.25,
        "second_unused_knob": 0.5}, searcher={"name": "single", "metric": "validation_loss",
                                              "max_length": {"batches": 1}})
    out = run_det(["e", "create", config, model_dir, "--local-dir", tmp_path / "local"],
                  env=COLUMNS_80)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    (at,) = [i for i, l in enumerate(lines) if re.match(r"\d\d:\d\d:\d\d trial 1 started: ", l)]
    assert len(lines[at]) <= 80 and lines[at + 1].startswith(" " * 9 + "second_unused_knob="), \
        out.stdout
