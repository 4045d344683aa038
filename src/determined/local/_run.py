"""``det experiment create ... --local``: validate, run, summarize."""

from __future__ import annotations

import contextlib
import logging
import os
import random
import shlex
import shutil
import sys
import time
from typing import TYPE_CHECKING, Any, Dict, Iterator, Optional, Tuple, Union

from rich.console import Console

from determined.common import scratch
from determined.common.console import TrimmedConsole
from determined.common.wording import NO_SCRIPT_CHECKPOINT, counted
from determined.experiment_validation import validate_experiment
from determined.config import (
    Length,
    is_script_entrypoint,
    load_config,
    metric_assumed,
    missing_metric_text,
    test_mode_config,
    validate_config,
)
from determined.errors import InvalidConfigError
from determined.local._pool import start_fork_server, trial_frameworks
from determined.local._store import default_local_dir
from determined.storage import build_storage
from determined.util import format_metrics

if TYPE_CHECKING:
    from determined.harness import TrialEnv
    from determined.local._result import ExperimentResult

# The driver, its database and the in-process trial runner are imported where used: a
# run starts its fork server (seconds of imports) before it spends time on them.

__all__ = ["run_local_experiment", "run_test_mode", "prepare_config"]


def prepare_config(
    config: Union[str, os.PathLike, Dict[str, Any]], model_dir: str, local_dir: str
) -> Dict[str, Any]:
    """Load and validate; default checkpoint storage to the local directory."""
    raw = load_config(config) if not isinstance(config, dict) else config
    source = f"experiment config {config}" if not isinstance(config, dict) else "experiment config"
    storage = {"type": "shared_fs", "host_path": os.path.join(os.path.abspath(local_dir), "checkpoints")}
    # The one validation path (determined.experiment_validation), as on a master.
    cfg = validate_experiment(raw, default_storage=storage, model_dir=model_dir, source=source).config
    return cfg


def run_test_mode(
    config: Dict[str, Any], model_dir: str, console: Optional[Console] = None,
) -> Dict[str, Any]:
    """Train one batch, validate, checkpoint, in this process; raise on any failure. A
    Trial class runs in ``model_dir`` (tracebacks name the user's own files); a script,
    which writes outputs of its own, in a temporary copy of it. Validation metrics
    without the searcher metric fail the test, as they fail a trial on a master,
    unless the metric is a default the user's config did not name
    (``determined.config.record_assumed_metric``): then one warning says so."""
    console = console or TrimmedConsole()
    cfg = validate_config(test_mode_config(config))
    with _test_mode_logging(), _traceback_as_written():
        if not is_script_entrypoint(cfg["entrypoint"]):
            return _run_test_mode(cfg, model_dir, console)
        with _scratch_copy(model_dir, cfg["checkpoint_storage"]) as workdir:
            return _run_test_mode(cfg, workdir, console, user_dir=os.path.abspath(model_dir))


@contextlib.contextmanager
def _traceback_as_written() -> Iterator[None]:
    """A failure of the user's code: its traceback goes to stderr as Python wrote it
    (error messages are folded at the terminal's width, and a traceback's paths are
    copied from it); the error raised on says what failed, in its first lines."""
    from determined.errors import UserCodeError

    try:
        yield
    except UserCodeError as e:
        trace = (e.user_traceback or "").rstrip()
        text = str(e)
        if not trace or not text.endswith(trace):
            raise
        sys.stderr.write(trace + "\n")
        sys.stderr.flush()
        bare = UserCodeError(text[:-len(trace)].rstrip("\n"))
        bare.user_traceback = e.user_traceback
        raise bare from None


class _EachOnce(logging.Filter):
    """Passes each distinct message once, and none of the runner's warnings that the
    searcher metric is missing (``_check_searcher_metric`` says so once, in the user's
    terms)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set = set()

    def filter(self, record: logging.LogRecord) -> bool:
        from determined.harness._runner import MISSING_METRIC

        if getattr(record, MISSING_METRIC, None):
            return False
        key = (record.levelno, record.getMessage())
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


@contextlib.contextmanager
def _test_mode_logging() -> Iterator[None]:
    """The platform's warnings while a test runs in this process, each once and as a
    local trial's log lines read (``12:04:31 WARNING message``) on stderr, unless the
    program configured logging of its own (then only the filter applies)."""
    from determined.harness._rank_logs import LOG_FORMAT, LOG_TIME_FORMAT

    logger = logging.getLogger("determined")
    once = _EachOnce()
    handler = None
    if not logger.hasHandlers():
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter(LOG_FORMAT, LOG_TIME_FORMAT))
        logger.addHandler(handler)
    logger.addFilter(once)
    try:
        yield
    finally:
        logger.removeFilter(once)
        if handler is not None:
            logger.removeHandler(handler)


def _check_searcher_metric(cfg: Dict[str, Any], validation: Dict[str, Any]) -> None:
    """The test's validation metrics hold the searcher metric, else the master's error;
    a metric the user's config did not name (a default: ``config.metric_assumed``) only
    gets a warning, in the user's terms (``config.missing_metric_text``)."""
    from determined.errors import InvalidTrialError

    if cfg["searcher"]["metric"] in validation:
        return
    if metric_assumed(cfg):
        logging.getLogger("determined.local").warning("%s", missing_metric_text(cfg, validation))
        return
    if is_script_entrypoint(cfg["entrypoint"]):
        where = "the script's validation metrics"
        fix = "report it with core.train.report_validation_metrics"
    else:
        where = f"the validation metrics of {str(cfg['entrypoint']).rpartition(':')[2]}"
        fix = "return it from evaluate_batch/evaluate_full_dataset"
    raise InvalidTrialError("Model definition test failed: "
                            + missing_metric_text(cfg, validation, where=where, fix=fix))


@contextlib.contextmanager
def _scratch_copy(model_dir: str, storage: Dict[str, Any]) -> Iterator[str]:
    """A temporary copy of ``model_dir`` to run in, as every other trial gets: what the
    script writes (outputs, downloads) stays out of the user's directory."""
    from determined.storage import copy_code

    host_path = storage.get("host_path")
    exclude = [os.path.join(host_path, storage.get("storage_path") or ""), host_path] \
        if host_path else []
    tmp = scratch.make("test-mode")  # named after this process: swept if it is killed
    try:
        workdir = os.path.join(tmp, os.path.basename(os.path.abspath(model_dir)) or "model")
        copy_code(model_dir, workdir, exclude=exclude)
        yield workdir
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_test_mode(cfg: Dict[str, Any], model_dir: str, console: Console,
                   user_dir: str = "") -> Dict[str, Any]:
    from determined import searcher as searchers
    from determined.harness import InProcessHost, OpKind, TrialEnv, TrialOp, TrialRunner

    rng = random.Random(cfg["reproducibility"]["experiment_seed"])
    hparams = searchers.sample_hparams(cfg["hyperparameters"], rng)
    env = TrialEnv(cfg, hparams, os.path.abspath(model_dir), trial_seed=rng.randrange(2**31),
                   test_mode=True)
    if is_script_entrypoint(cfg["entrypoint"]):
        return _test_script(env, cfg, console, user_dir or env.model_dir)
    host = InProcessHost(
        [TrialOp(OpKind.TRAIN, Length.from_dict({"batches": 1})), TrialOp(OpKind.VALIDATE),
         TrialOp(OpKind.CHECKPOINT), TrialOp(OpKind.CLOSE)],
        smaller_is_better=cfg["searcher"]["smaller_is_better"],
    )
    storage = build_storage(cfg["checkpoint_storage"])
    start = time.time()
    cwd = os.getcwd()
    try:
        os.chdir(model_dir)
        TrialRunner(env, host, storage).run()
    finally:
        os.chdir(cwd)
    for _, uuid, _ in host.checkpoints:
        storage.delete(uuid)
    summary = {
        "hparams": hparams,
        "training": host.training[-1][1]["avg_metrics"] if host.training else {},
        "validation": host.validations[-1][1]["validation_metrics"] if host.validations else {},
        "checkpoints": len(host.checkpoints),
        "seconds": time.time() - start,
    }
    if host.validations:
        _check_searcher_metric(cfg, summary["validation"])
    console.print(
        f"[green]Model definition test succeeded[/green] in {summary['seconds']:.1f}s: trained 1 batch "
        f"({format_metrics(summary['training'])}), validated "
        f"({format_metrics(summary['validation'])}), checkpointed and restored: nothing lost."
        if summary["checkpoints"]
        else "[yellow]Model definition test ran but wrote no checkpoint"
    )
    return summary


def _test_script(env: TrialEnv, cfg: Dict[str, Any], console: Console,
                 user_dir: str) -> Dict[str, Any]:
    """Test mode of a script: its command gets one short TRAIN and a VALIDATE. It runs
    in a copy of ``user_dir`` (``env.model_dir``); its output names ``user_dir``."""
    from determined.errors import InvalidModelDefError
    from determined.harness import InProcessHost, OpKind, TrialOp
    from determined.harness._script_trial import run_script

    host = InProcessHost(
        [TrialOp(OpKind.TRAIN, Length.from_dict(cfg["searcher"]["max_length"])),
         TrialOp(OpKind.VALIDATE), TrialOp(OpKind.CLOSE)],
        smaller_is_better=cfg["searcher"]["smaller_is_better"],
    )
    storage = build_storage(cfg["checkpoint_storage"])
    start = time.time()
    copy = env.model_dir.rstrip(os.sep)
    code = run_script(env, host, cfg["checkpoint_storage"],
                      rewrite=lambda line: line.replace(copy + os.sep, user_dir + os.sep))
    for _, uuid, _ in host.checkpoints:
        storage.delete(uuid)
    if code != 0:
        raise InvalidModelDefError(
            f"Model definition test failed: entrypoint {cfg['entrypoint']!r} exited with "
            f"code {code} (its output is above)")
    summary = {
        "hparams": env.hparams,
        "training": host.training[-1][1].get("avg_metrics", {}) if host.training else {},
        "validation": host.validations[-1][1].get("validation_metrics", {})
        if host.validations else {},
        "checkpoints": len(host.checkpoints),
        "seconds": time.time() - start,
    }
    if host.validations:
        _check_searcher_metric(cfg, summary["validation"])
    reports = [counted(len(v), k) for k, v in (("training report", host.training),
                                              ("validation report", host.validations),
                                              ("checkpoint", host.checkpoints))]
    console.print(f"[green]Model definition test succeeded[/green] in "
                  f"{summary['seconds']:.1f}s: the script exited 0 after "
                  f"{', '.join(reports[:2])} and {reports[2]}")
    if not host.checkpoints:  # a real run of it would start over after each pause or failure
        console.print(f"[yellow]{NO_SCRIPT_CHECKPOINT}", highlight=False)
    return summary


def run_local_experiment(
    config: Union[str, os.PathLike, Dict[str, Any]],
    model_dir: str,
    *,
    slots: int = 1,
    local_dir: Optional[str] = None,
    console: Optional[Console] = None,
    show_progress: bool = True,
) -> ExperimentResult:
    """Run an experiment on this machine with no master.

    Args:
        config: a YAML path or a config dict.
        model_dir: the model definition directory.
        slots: slots of this machine (processes at once); a trial takes
            ``resources.slots_per_trial`` of them, one process each.
        local_dir: where records and (by default) checkpoints go.

    Returns:
        The result: state, trials, best trial and best checkpoint.
    """

    console = console or TrimmedConsole()
    local_dir = os.path.abspath(local_dir or default_local_dir())
    cfg = prepare_config(config, model_dir, local_dir)
    if cfg["resources"]["slots_per_trial"] > slots:
        raise InvalidConfigError(
            [("resources.slots_per_trial",
              f"a trial needs {cfg['resources']['slots_per_trial']} slots (one process each) "
              f"but this run has {slots}: pass --slots {cfg['resources']['slots_per_trial']} "
              "or more")],
            f"experiment config {config}" if not isinstance(config, dict) else "experiment config",
        )
    # Its imports (seconds with PyTorch) overlap the set-up below.
    start_fork_server(trial_frameworks(cfg, model_dir))
    from determined.local._driver import LocalDriver
    from determined.local._store import OWNER, LocalStore, db_path, open_store

    db = open_store(local_dir)
    try:
        storage_config = cfg["checkpoint_storage"]
        source_ckpt = _resolve_source(cfg, db)
        exp_id = db.create_experiment(cfg, _packed(model_dir), owner=OWNER)
    except BaseException:
        db.close()
        raise
    store = LocalStore(db, local_dir, exp_id)
    from determined.local._display import print_path

    head = (f"Experiment {exp_id}: {cfg['description']}; searcher {cfg['searcher']['name']}, "
            f"{counted(slots, 'slot')};")
    if len(head) + len(" records in ") + len(db_path(local_dir)) > console.width:
        console.print(head, markup=False, highlight=False)
        head = ""
    print_path(console, f"{head} records in".lstrip(), db_path(local_dir))
    try:
        driver = LocalDriver(
            cfg, model_dir, exp_id, store, storage_config, slots=slots,
            source_checkpoint=source_ckpt,
        )
    except BaseException:
        store.close()
        raise
    return drive(console, driver, cfg, store, show_progress)


def _packed(model_dir: str) -> bytes:
    """The model directory as a master stores it (``det e download-model-def``); empty
    if it cannot be packed (too large: the run uses the directory in place)."""
    from determined.common.api import pack_context

    try:
        return pack_context(model_dir)
    except ValueError:
        return b""


def drive(console: Console, driver: Any, cfg: Dict[str, Any], store: Any,
          show_progress: bool) -> Any:
    """Run ``driver`` to its end (with a progress display when asked), close ``store``
    and print the summary table; returns the driver's result."""
    from determined._metric_order import MetricOrder
    from determined.local._display import (ProgressDisplay, TrialFailures, print_summary,
                                           step_unit, trial_counts)

    unit = step_unit(cfg)  # a script's steps may be epochs
    failures = TrialFailures(console, unit, alone=True)
    try:
        if show_progress:
            # The core counts what trials trained so far (scripts: their reported progress).
            display = ProgressDisplay(console, cfg["searcher"]["metric"],
                                      lambda: driver.core.progress(), MetricOrder.of(cfg),
                                      lambda: trial_counts(driver.core),
                                      best=driver.core.best_validation(), unit=unit)
            driver.on_event = display.event
            with display:
                result = driver.run()
        else:  # no progress, but a failed trial's error as with it
            driver.on_event = failures.event
            result = driver.run()
    except KeyboardInterrupt as interrupt:
        if not show_progress:
            failures.after_ctrl_c()
        _print_interrupted(console, driver, store.local_dir)
        interrupt.reported = True  # type: ignore[attr-defined]  # det says no more
        raise
    finally:
        store.close()
    print_summary(console, result, cfg["searcher"]["metric"], unit,
                  where=_local_dir_option(store.local_dir))
    return result


def _local_dir_option(local_dir: str) -> str:
    """The option of ``det`` that names ``local_dir``: ``--local`` for the default one."""
    if os.path.abspath(default_local_dir()) == os.path.abspath(local_dir):
        return "--local"
    return f"--local-dir {shlex.quote(local_dir)}"


def _print_interrupted(console: Console, driver: Any, local_dir: str) -> None:
    """After Ctrl-C: the state the experiment was left in and, when it is PAUSED, the
    command that continues it."""
    state = driver.final_state  # None: interrupted before its loop ran (nothing to stop)
    exp_id = driver.experiment_id
    if state not in (None, "PAUSED"):
        console.print(f"Interrupted: experiment {exp_id} is {state} (its trials were "
                      "killed before they could checkpoint); it cannot be resumed",
                      markup=False, highlight=False)
        return
    where = _local_dir_option(local_dir)
    slots = f" --slots {driver.slots}" if driver.slots != 1 else ""
    said = (" is PAUSED (its running trials checkpointed)" if state else "")
    console.print(f"Interrupted: experiment {exp_id}{said}; continue it with:",
                  markup=False, highlight=False)
    console.print(f"det experiment resume {where} {exp_id}{slots}", markup=False,
                  highlight=False, soft_wrap=True)


def _resolve_source(cfg: Dict[str, Any], db: Any) -> Optional[Tuple[str, str]]:
    """(uuid, path) of the checkpoint searcher.source_checkpoint_uuid / source_trial_id
    names, in the storage of the experiment that wrote it (as on a master)."""
    from determined.master.db import SourceCheckpointError, resolve_source_checkpoint

    try:
        return resolve_source_checkpoint(cfg, db, build_storage)
    except SourceCheckpointError as err:
        raise InvalidConfigError([(err.field, str(err).split(": ", 1)[1] +
                                   " in this local directory")]) from None
