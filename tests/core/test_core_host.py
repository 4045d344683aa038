"""How Core API calls reach a trial's host: through the real in-process host
(``InProcessHost``, the host of ``--test`` runs), which records every report."""

import json
import pathlib
from typing import Optional

import pytest

from determined import InvalidHP, core
from determined.config import Length, Unit
from determined.core._context import context_for
from determined.core._session import Session
from determined.harness._env import TrialEnv
from determined.harness._host import OpKind, TrialOp
from determined.harness._inprocess import InProcessHost, train_validate_plan
from determined.storage import SharedFSStorageManager

CONFIG = {
    "entrypoint": "python3 train.py",
    "searcher": {"name": "adaptive_asha", "metric": "validation_loss",
                 "smaller_is_better": True, "max_length": {"batches": 20}},
    "hyperparameters": {"lr": 0.1},
}


def _context(tmp_path: pathlib.Path, host: InProcessHost, latest: Optional[str] = None):
    env = TrialEnv(experiment_config=CONFIG, hparams={"lr": 0.1}, model_dir=str(tmp_path),
                   experiment_id=3, trial_id=5, trial_seed=11, latest_checkpoint=latest)
    storage = SharedFSStorageManager(str(tmp_path / "storage"))
    session = Session(host=host, storage=storage, env=env)
    return context_for(session, core.DummyDistributedContext()), storage


def _batches(n: int) -> Length:
    return Length(Unit.BATCHES, n)


def test_operations_reports_and_checkpoints_map_onto_the_host(tmp_path):
    host = InProcessHost(train_validate_plan([_batches(10), _batches(20)]))
    ctx, storage = _context(tmp_path, host)
    steps, lengths = 0, []
    with ctx:
        for op in ctx.searcher.operations():
            lengths.append(op.length)
            while steps < op.length:
                steps += 5
                ctx.train.report_training_metrics(steps, {"loss": 1.0 / steps},
                                                  batch_metrics=[{"loss": 1.0}] * 5)
                op.report_progress(steps)
            ctx.train.report_validation_metrics(steps, {"validation_loss": 0.5, "acc": 0.9})
            with ctx.checkpoint.store_path({"steps_completed": steps}) as (path, sid):
                (path / "model.bin").write_bytes(b"w")
            op.report_completed(0.5)
    assert lengths == [10, 20]
    assert [s for s, _ in host.training] == [5, 10, 15, 20]
    assert host.training[0][1] == {"avg_metrics": {"loss": 0.2},
                                   "batch_metrics": [{"loss": 1.0}] * 5, "num_inputs": 0}
    assert host.validations == [
        (10, {"validation_metrics": {"validation_loss": 0.5, "acc": 0.9}, "num_inputs": 0}),
        (20, {"validation_metrics": {"validation_loss": 0.5, "acc": 0.9}, "num_inputs": 0})]
    # The searcher gets the validation reported at those steps.
    assert host.searcher_validations == [
        (10, {"validation_metrics": {"validation_loss": 0.5, "acc": 0.9}}),
        (20, {"validation_metrics": {"validation_loss": 0.5, "acc": 0.9}})]
    assert [(s, m["steps_completed"], m["experiment_id"], m["trial_id"])
            for s, _, m in host.checkpoints] == [(10, 10, 3, 5), (20, 20, 3, 5)]
    uuid = host.checkpoints[-1][1]
    on_disk = json.loads((tmp_path / "storage" / uuid / "metadata.json").read_text())
    assert on_disk == host.checkpoints[-1][2]
    assert on_disk["hparams"] == {"lr": 0.1} and on_disk["batch_number"] == 20
    # Storage housekeeping (GC, leftovers of a killed trial) finds them as a Trial's.
    assert storage.trial_checkpoints(3, 5) == {u: s for s, u, _ in host.checkpoints}


def test_report_completed_without_a_validation_reports_one(tmp_path):
    host = InProcessHost(train_validate_plan([_batches(4)]))
    ctx, _ = _context(tmp_path, host)
    with ctx:
        for op in ctx.searcher.operations():
            ctx.train.report_training_metrics(op.length, {"loss": 2.0})
            op.report_completed(0.25)
    assert host.validations == [(4, {"validation_metrics": {"validation_loss": 0.25},
                                      "num_inputs": 0})]
    assert host.searcher_validations == [(4, {"validation_metrics": {"validation_loss": 0.25}})]


def test_operations_demand_report_completed(tmp_path):
    host = InProcessHost(train_validate_plan([_batches(4), _batches(8)]))
    ctx, _ = _context(tmp_path, host)
    with pytest.raises(RuntimeError, match="report_completed"):
        for _ in ctx.searcher.operations():
            pass
    with pytest.raises(RuntimeError, match="once"):
        op = core.SearcherOperation(ctx.searcher, 4, True)
        op._completed = True
        op.report_completed(1.0)


def test_a_validate_first_after_restart_resumes_at_the_checkpoint(tmp_path):
    """Restarted after training but before validating: the first operation asks for no
    more training than the checkpoint holds."""
    first = InProcessHost([TrialOp(OpKind.TRAIN, _batches(6))])
    ctx, storage = _context(tmp_path, first)
    with ctx:
        op = next(iter(ctx.searcher.operations()))
        with ctx.checkpoint.store_path({"steps_completed": op.length}) as (path, sid):
            pass
    again = InProcessHost([TrialOp(OpKind.VALIDATE)])
    ctx, _ = _context(tmp_path, again, latest=storage.describe(sid))
    with ctx:
        assert ctx.checkpoint.get_metadata(sid)["steps_completed"] == 6
        ops = ctx.searcher.operations()
        op = next(ops)
        assert op.length == 6
        op.report_completed(0.3)
        assert list(ops) == []
    assert again.searcher_validations == [(6, {"validation_metrics": {"validation_loss": 0.3}})]


def test_should_preempt_follows_the_host(tmp_path):
    host = InProcessHost(train_validate_plan([_batches(100)]), stop_after_workloads=2)
    ctx, _ = _context(tmp_path, host)
    with ctx:
        assert ctx.preempt.should_preempt() is False
        ctx.train.report_training_metrics(1, {"loss": 1.0})
        assert ctx.preempt.should_preempt() is False
        ctx.train.report_training_metrics(2, {"loss": 1.0})
        assert ctx.preempt.should_preempt() is True
        assert ctx.preempt.should_preempt(auto_ack=False) is True


def test_invalid_hp_ends_the_trial_early_with_exit_0(tmp_path):
    host = InProcessHost(train_validate_plan([_batches(1)]))
    ctx, _ = _context(tmp_path, host)
    with pytest.raises(SystemExit) as exit_info:
        with ctx:
            raise InvalidHP("lr too large")
    assert exit_info.value.code == 0
    assert host.early_exit == "invalid_hp"


def test_checkpoints_on_the_platform_need_steps_completed(tmp_path):
    host = InProcessHost(train_validate_plan([_batches(1)]))
    ctx, storage = _context(tmp_path, host)
    with pytest.raises(ValueError, match="steps_completed"):
        with ctx.checkpoint.store_path({"epoch": 1}) as (path, sid):
            (path / "x").write_text("x")
    assert storage.list_checkpoints() == [] and host.checkpoints == []


def test_progress_fraction_becomes_searcher_units(tmp_path):
    seen = []

    class ProgressHost(InProcessHost):
        def report_progress(self, units: float) -> None:
            seen.append(units)

    ctx, _ = _context(tmp_path, ProgressHost(train_validate_plan([_batches(20)])))
    ctx.train.report_progress(0.25)
    op = next(iter(ctx.searcher.operations()))
    op.report_progress(7)
    assert seen == [5.0, 7.0]
