"""In-process drivers that run a search with real training and log every validation.

Both drivers play a single worker: one operation at a time, deterministic order.

- :func:`run_determined` executes our searcher's operations first-in first-out by the
  order the searcher issued them (the policy of ``determined.searcher.simulate`` without
  a concurrency limit). ``Train`` lengths are cumulative; a trial's model stays in memory
  between operations, so ``Checkpoint`` is a no-op and ``Close`` frees the trial.
- :func:`run_optuna` runs ``study.optimize`` sequentially (``n_jobs=1``): each trial
  trains to the next report step, validates, reports and asks ``should_prune()``.

"Compute" is batches trained, summed over all trials in the order they happened; the
:class:`Ledger` records the running total at every validation.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import Any, Deque, Dict, List, Mapping, Optional, Sequence

from digits import Data, DigitsTrial

from determined.searcher import (
    Checkpoint,
    Close,
    Create,
    Operation,
    Shutdown,
    Train,
    Validate,
    make_searcher,
)


@dataclasses.dataclass
class Validation:
    cum_batches: int  # batches trained over the whole search when this validation ran
    accuracy: float
    trial: int
    trial_batches: int


@dataclasses.dataclass
class Ledger:
    total_batches: int = 0
    trials: int = 0
    validations: List[Validation] = dataclasses.field(default_factory=list)
    wall_seconds: float = 0.0

    def trained(self, n: int) -> None:
        self.total_batches += n

    def validated(self, trial: int, trial_batches: int, accuracy: float) -> None:
        self.validations.append(Validation(self.total_batches, accuracy, trial, trial_batches))

    def batches_to_reach(self, target: float) -> Optional[int]:
        """Running compute when the best validation accuracy first reached ``target``."""
        for v in self.validations:
            if v.accuracy >= target - 1e-12:
                return v.cum_batches
        return None

    def best_within(self, budget: int) -> float:
        """Best validation accuracy among validations run within ``budget`` batches."""
        accs = [v.accuracy for v in self.validations if v.cum_batches <= budget]
        return max(accs) if accs else 0.0

    @property
    def best(self) -> float:
        return max((v.accuracy for v in self.validations), default=0.0)


def run_determined(config: Mapping[str, Any], data: Data, capacity: Optional[int] = 1) -> Ledger:
    """Run one experiment's search (``random``, ``adaptive_asha``, ...) to ``Shutdown``.

    ``capacity``: what the driver tells the searcher (one worker: 1); None tells nothing,
    as drivers did before ``Searcher.on_capacity_changed`` existed.
    """
    start = time.perf_counter()
    ledger = Ledger()
    searcher = make_searcher(config)
    if capacity is not None:
        searcher.on_capacity_changed(capacity)
    metric = config["searcher"]["metric"]
    queue: Deque[Operation] = collections.deque()
    trials: Dict[int, DigitsTrial] = {}
    shutdown: List[Shutdown] = []

    def push(ops: Sequence[Operation]) -> None:
        for op in ops:
            if shutdown:
                raise AssertionError(f"operation after Shutdown: {op}")
            if isinstance(op, Shutdown):
                shutdown.append(op)
            else:
                queue.append(op)

    push(searcher.start())
    while queue:
        op = queue.popleft()
        if isinstance(op, Create):
            if op.checkpoint_of is not None:
                raise NotImplementedError("warm starts are not used by this benchmark")
            trials[op.request_id] = DigitsTrial(op.hparams, op.trial_seed, data)
            ledger.trials += 1
            push(searcher.on_trial_created(op.request_id))
        elif isinstance(op, Train):
            ledger.trained(trials[op.request_id].train_to(op.length.units))
        elif isinstance(op, Validate):
            trial = trials[op.request_id]
            acc = trial.validate()
            ledger.validated(op.request_id, trial.batches, acc)
            push(searcher.on_validation_completed(op.request_id, {metric: 1.0 - acc}))
        elif isinstance(op, Checkpoint):
            pass  # the trial's state stays in memory
        elif isinstance(op, Close):
            del trials[op.request_id]
            push(searcher.on_trial_closed(op.request_id))
        else:
            raise AssertionError(f"unexpected operation {op}")
    if not shutdown or shutdown[0].failure:
        raise RuntimeError(f"search did not shut down cleanly: {shutdown}")
    ledger.wall_seconds = time.perf_counter() - start
    return ledger


def run_optuna(
    *,
    seed: int,
    max_trials: int,
    max_length: int,
    min_resource: int,
    reduction_factor: int,
    report_steps: Sequence[int],
    suggest: Any,
    data: Data,
) -> Ledger:
    """TPE sampler + Hyperband pruner, sequential, ``max_trials`` trials.

    ``suggest(trial) -> hparams`` defines the search space. Each trial trains to each of
    ``report_steps`` in turn (the last is ``max_length``), validates, reports the
    validation error at that step and stops if ``should_prune()``.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    start = time.perf_counter()
    ledger = Ledger()
    study = optuna.create_study(
        study_name=f"digits-search-seed{seed}",  # Hyperband's bracket choice hashes this
        direction="minimize",
        sampler=optuna.samplers.TPESampler(seed=seed),
        pruner=optuna.pruners.HyperbandPruner(
            min_resource=min_resource,
            max_resource=max_length,
            reduction_factor=reduction_factor,
        ),
    )

    def objective(trial: "optuna.Trial") -> float:
        hparams = suggest(trial)
        # Deterministic per-trial seed in [0, 2**31), distinct across trials and seeds.
        trial_seed = (seed * 1_000_003 + trial.number * 7_919 + 1) % (2**31)
        model = DigitsTrial(hparams, trial_seed, data)
        ledger.trials += 1
        error = 1.0
        for step in report_steps:
            ledger.trained(model.train_to(step))
            acc = model.validate()
            ledger.validated(trial.number, model.batches, acc)
            error = 1.0 - acc
            trial.report(error, step)
            if step < max_length and trial.should_prune():
                raise optuna.TrialPruned()
        return error

    study.optimize(objective, n_trials=max_trials, n_jobs=1)
    ledger.wall_seconds = time.perf_counter() - start
    return ledger


_RAY_STARTED = False


def _ray_trial_index(trial_id: str, trial_dir: str) -> int:
    """A Ray trial's creation index: ``..._<trial id>_<index>_<config>`` in its directory
    name (the trial id itself is a random hex string in Ray 2.60)."""
    import os

    tail = os.path.basename(trial_dir.rstrip("/")).split(f"{trial_id}_", 1)[1]
    return int(tail.split("_", 1)[0])


def _ray_trainable(config: Dict[str, Any], data: Any = None) -> None:
    """One Ray Tune trial: train to each report step, report accuracy there."""
    import torch
    from ray import tune

    torch.set_num_threads(1)
    ctx = tune.get_context()
    index = _ray_trial_index(ctx.get_trial_id(), ctx.get_trial_dir())
    seed = (config["base_seed"] * 1_000_003 + index * 7_919 + 1) % (2**31)
    model = DigitsTrial(config, seed, data)
    for step in config["report_steps"]:
        model.train_to(step)
        tune.report({"accuracy": model.validate(), "batches": step})


def run_ray(
    *,
    seed: int,
    max_trials: int,
    max_length: int,
    grace_period: int,
    reduction_factor: int,
    report_steps: Sequence[int],
    data: Data,
) -> Ledger:
    """Ray Tune: ``ASHAScheduler`` + ``OptunaSearch(seed)`` (TPE), one trial at a time.

    Ray's ASHA stops a trial at a rung or lets it continue at once (it never pauses one),
    so with one trial at a time compute is each trial's last reported step, summed in
    trial order; validations are the reports.
    """
    import os
    import sys
    import tempfile

    import ray
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search import ConcurrencyLimiter
    from ray.tune.search.optuna import OptunaSearch

    global _RAY_STARTED
    if not _RAY_STARTED:
        import socket

        from ray.cluster_utils import Cluster

        # A one-CPU head node with its agents on fixed ports: ray.init's default start
        # waits for port files that a loaded machine writes too late (a raylet check fails).
        ports = {}
        for name in ("metrics_agent_port", "metrics_export_port", "runtime_env_agent_port",
                     "dashboard_agent_listen_port"):
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                ports[name] = sock.getsockname()[1]
        for attempt in range(3):  # its 30 s start-up limit is tight on a loaded machine
            try:
                cluster = Cluster(initialize_head=True, head_node_args=dict(
                    num_cpus=1, include_dashboard=False, **ports))
                break
            except Exception:  # noqa: BLE001 - Ray raises a bare Exception on time-outs
                if attempt == 2:
                    raise
                ray.shutdown()
        path = os.pathsep.join(p for p in sys.path if p)
        ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR",
                 runtime_env={"env_vars": {"PYTHONPATH": path}})
        _RAY_STARTED = True
    start = time.perf_counter()
    space = {
        "learning_rate": tune.loguniform(1e-4, 1.0),
        "momentum": tune.uniform(0.0, 0.95),
        "hidden_size": tune.randint(8, 257),
        "dropout": tune.uniform(0.0, 0.6),
        "weight_decay": tune.loguniform(1e-6, 1e-2),
        "base_seed": seed,
        "report_steps": list(report_steps),
    }
    with tempfile.TemporaryDirectory() as storage:
        tuner = tune.Tuner(
            tune.with_parameters(_ray_trainable, data=data),
            param_space=space,
            tune_config=tune.TuneConfig(
                metric="accuracy", mode="max", num_samples=max_trials,
                search_alg=ConcurrencyLimiter(OptunaSearch(seed=seed), max_concurrent=1),
                scheduler=ASHAScheduler(time_attr="batches", max_t=max_length,
                                        grace_period=grace_period,
                                        reduction_factor=reduction_factor),
                reuse_actors=True,  # one worker process for all trials (wall time only)
            ),
            run_config=tune.RunConfig(storage_path=storage, verbose=0),
        )
        grid = tuner.fit()
        trials = []
        for i in range(len(grid)):
            r = grid[i]
            df = r.metrics_dataframe
            index = _ray_trial_index(str(df["trial_id"].iloc[0]), str(r.path))
            trials.append((index, list(df["batches"]), list(df["accuracy"])))
    ledger = Ledger()
    for index, steps, accs in sorted(trials):
        ledger.trials += 1
        done = 0
        for step, acc in zip(steps, accs):
            ledger.trained(int(step) - done)
            done = int(step)
            ledger.validated(index, done, float(acc))
    ledger.wall_seconds = time.perf_counter() - start
    return ledger
