"""The adapter contract: one event sequence replayed through the local driver and through
the master's ``ExperimentRun`` gives identical records (both write the master's ``Store``
schema, in their own SQLite files), identical searcher calls, identical operations
handed to the trial processes and identical restore paths.

Both adapters are real; what stands in is their collaborator only: a pool of fake
processes for the local driver (it records what a trial would be started with; each
talks over a real pipe, which the test speaks for, and exits by closing it), and for
the master's run the real ``Experiments`` service as its host, with process kills and
scheduler wake-ups noted and file deletion done at once.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import uuid as uuidlib
from typing import Any, Dict, List, Optional, Tuple

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from determined import searcher as searchers
from determined.config import validate_config
from determined.local._driver import LocalDriver
from determined.local._store import LocalStore, open_store
from determined.master.db import NotFoundError, Store
from determined.master._config import LimitsConfig
from determined.master.experiments import Experiments

OWNER = "determined"
_RECORDED = ("start", "on_trial_created", "on_validation_completed", "on_trial_closed",
             "on_trial_exited_early", "on_capacity_changed")


class _RecordingSearcher:
    """The real searcher, with the calls the core makes on it written down."""

    def __init__(self, inner: Any, calls: List[Tuple[Any, ...]]):
        self._inner, self._calls = inner, calls

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name in _RECORDED:
            def call(*args: Any) -> Any:
                self._calls.append((name,) + tuple(
                    _nan_as_text(a.value if hasattr(a, "value") else a) for a in args))
                return value(*args)
            return call
        return value


def _nan_as_text(value: Any) -> Any:
    """``value`` with NaN as "nan": NaNs that crossed a pipe are other objects, and
    equal only by identity."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {k: _nan_as_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_nan_as_text(v) for v in value)
    return value


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Dict[str, List[Tuple[Any, ...]]]:
    """Searcher calls by side ("local", "master"): the side being built is ``current``."""
    calls: Dict[str, List[Tuple[Any, ...]]] = {"local": [], "master": [], "current": []}
    real = searchers.make_searcher

    def make(config: Any) -> Any:
        return _RecordingSearcher(real(config), calls[calls["current"][0]])  # type: ignore
    monkeypatch.setattr(searchers, "make_searcher", make)
    return calls


def make_config(root: str, name: str = "adaptive_asha") -> Dict[str, Any]:
    fields: Dict[str, Any] = {"name": name, "metric": "loss", "smaller_is_better": True,
                              "max_length": {"batches": 8}}
    if name == "adaptive_asha":
        fields.update(max_trials=4, divisor=2, max_rungs=2, max_concurrent_trials=0)
    if name == "random":
        fields.update(max_trials=3)
    return validate_config({
        "hyperparameters": {"global_batch_size": 4,
                            "lr": {"type": "double", "minval": 0.01, "maxval": 1.0}},
        "searcher": fields, "max_restarts": 1,
        "checkpoint_storage": {"type": "shared_fs", "host_path": root,
                               "save_trial_best": 1, "save_trial_latest": 1},
        "reproducibility": {"experiment_seed": 7}, "entrypoint": "model_def:Trial",
    })


# ---------------------------------------------------------------- the collaborators


class _FakeProcess:
    """A trial process the test speaks for through ``conn``, the other end of the
    driver's pipe; its sentinel becomes ready when it exits."""

    def __init__(self) -> None:
        self.exitcode: Optional[int] = None
        self.pid = 4194305  # above the kernel's largest pid: owns no scratch directory
        self.conn, self.driver_end = multiprocessing.Pipe()
        self.sentinel, self._alive_fd = os.pipe()

    def is_alive(self) -> bool:
        return not self.conn.closed

    def exit(self, code: int) -> None:
        """The script's exit event: the process ends with ``code``."""
        self.exitcode = code
        if not self.conn.closed:
            self.conn.close()
            os.close(self._alive_fd)

    def kill(self) -> None:
        pass  # the script's own exit event follows

    terminate = kill

    def join(self, timeout: Optional[float] = None) -> None:
        pass

    def received(self) -> List[Any]:
        """What the driver sent since the last call."""
        got = []
        while not self.conn.closed and self.conn.poll():
            got.append(self.conn.recv())
        return got

    def close(self) -> None:
        self.exit(self.exitcode or 0)
        self.driver_end.close()
        os.close(self.sentinel)


class _FakePool:
    """Stands in for the warm pool of trial processes; notes what each starts with."""

    def __init__(self) -> None:
        self.envs: List[Any] = []
        self.started: List[_FakeProcess] = []

    def run(self, args: Tuple[Any, ...]) -> Tuple[Any, Any]:
        self.envs.append(args[0])
        self.started.append(_FakeProcess())
        return self.started[-1], self.started[-1].driver_end

    def fill(self, wanted: Optional[int] = None) -> None:
        pass

    def close(self) -> None:
        pass


class _RecordingStorage:
    """The real storage; each delete notes the record's state at that moment."""

    def __init__(self, inner: Any, store: Store, deletes: List[Tuple[str, str]]):
        self._inner, self._store, self._deletes = inner, store, deletes

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def delete(self, uuid: str) -> None:
        try:
            state = self._store.get_checkpoint(uuid).state
        except NotFoundError:
            state = "no record"  # its record went with a rollback
        self._deletes.append((uuid, state))
        self._inner.delete(uuid)


# ---------------------------------------------------------------- the two sides


class _Side:
    """One adapter behind the events of a script."""

    name = ""

    def __init__(self, root: str, config: Dict[str, Any], capacity: int):
        self.root = root
        self.config = config
        self.capacity = capacity
        self.ops: Dict[int, List[Any]] = {}  # operations each trial's process received
        self.restores: List[Tuple[int, Optional[str], bool]] = []
        self.deletes: List[Tuple[str, str]] = []
        self.awaiting: set = set()

    def _relative(self, path: Optional[str]) -> Optional[str]:
        return os.path.relpath(path, self.root) if path else None

    def records(self) -> Dict[str, Any]:
        store, exp_id = self.db, self.exp_id
        exp = store.get_experiment(exp_id)
        by_id = {t.id: t.request_id for t in store.list_trials(exp_id)}
        trials = []
        for t in store.list_trials(exp_id):
            metrics = [(m.kind, m.total_batches, m.metrics, m.batch_metrics)
                       for m in store.list_metrics(t.id)]
            logs = [ln.line for ln in store.get_logs(t.id, limit=10**6)]
            trials.append({
                "request_id": t.request_id, "state": t.state, "hparams": t.hparams,
                "seed": t.seed, "total_batches": t.total_batches,
                "best_validation": t.best_validation, "latest_checkpoint": t.latest_checkpoint,
                "restarts": t.restarts, "warm_start": t.warm_start_checkpoint,
                "ended": t.end_time is not None, "metrics": metrics, "logs": logs})
        checkpoints = [(c.uuid, by_id[c.trial_id], c.total_batches, c.state, c.resources,
                        c.framework, c.format) for c in store.list_checkpoints(exp_id)]
        snap = store.get_searcher_snapshot(exp_id)
        snapshot = {k: v for k, v in (snap.snapshot if snap else {}).items() if k != "local"}
        snapshot["source_checkpoint_path"] = self._relative(
            snapshot.get("source_checkpoint_path"))
        return {"state": exp.state, "progress": exp.progress, "trials": trials,
                "checkpoints": checkpoints, "snapshot": snapshot,
                "events": snap.events_applied if snap else None}

    @property
    def core(self) -> Any:
        raise NotImplementedError

    def apply(self, event: Tuple[Any, ...]) -> Any:
        """Carry ``event`` out; then every process blocked on an operation asks again
        (the master's long poll wakes, the driver answers a waiting process)."""
        kind, args = event[0], event[1:]
        result = getattr(self, "do_" + kind)(*args)
        return result


class LocalSide(_Side):
    name = "local"

    def __init__(self, root: str, config: Dict[str, Any], capacity: int,
                 source: Optional[Tuple[str, str]] = None):
        super().__init__(root, config, capacity)
        local_dir = os.path.join(root, "local")
        self.db = open_store(local_dir)
        self.exp_id = self.db.create_experiment(config, b"", owner=OWNER)
        self.store = LocalStore(self.db, local_dir, self.exp_id)
        model_dir = os.path.join(root, "model")
        os.makedirs(model_dir, exist_ok=True)
        self.driver = LocalDriver(
            config, model_dir, self.exp_id, self.store, config["checkpoint_storage"],
            slots=capacity, source_checkpoint=source)
        self.pool = self.driver.processes.pool = _FakePool()  # type: ignore[assignment]
        self.procs: Dict[int, _FakeProcess] = {}  # the running ones, by request id
        self.driver.storage = _RecordingStorage(self.driver.storage, self.db, self.deletes)

    @property
    def core(self) -> Any:
        return self.driver.core

    def close(self) -> None:
        for p in self.pool.started:
            p.close()
        self.store.close()

    def _with_ops(self, fn: Any) -> Any:
        """Run ``fn``; then note the operations each running process was sent."""
        result = fn()
        for r, p in list(self.procs.items()):
            if r not in self.driver.processes:  # exited: what it was sent is lost
                del self.procs[r]
                continue
            for msg in p.received():
                if msg[0] == "op":
                    self.ops.setdefault(r, []).append(msg[1])
        return result

    def _message(self, r: int, msg: Tuple[Any, ...]) -> None:
        """Trial ``r``'s process sends ``msg``; the driver handles what is ready."""
        self.procs[r].conn.send(msg)
        self._with_ops(lambda: self.driver.processes.wait(timeout=5.0))

    def do_start(self) -> None:
        self.driver._do(self.core.start(activate=True))

    def do_launch(self, r: int) -> None:
        self.driver.start_trial(r)
        self.procs[r] = self.pool.started[-1]
        env = self.pool.envs[-1]
        self.restores.append((r, self._relative(env.latest_checkpoint), env.warm_start))

    def do_next_op(self, r: int) -> None:
        self._message(r, ("next_op",))

    def do_train(self, r: int, batches: int, metrics: Dict[str, Any]) -> None:
        self._message(r, ("training", batches, metrics))

    def do_validate(self, r: int, batches: int, report: Dict[str, Any]) -> None:
        self._message(r, ("validation", batches, report))

    def do_validate_done(self, r: int, batches: int, report: Dict[str, Any]) -> None:
        self._message(r, ("validate_op_completed", batches, report))

    def do_checkpoint(self, r: int, batches: int, uuid: str, meta: Dict[str, Any]) -> None:
        self._message(r, ("checkpoint", batches, uuid, meta))

    def do_early_exit(self, r: int) -> None:
        self._message(r, ("early_exit",))

    def do_exit(self, r: int, code: int) -> None:
        self.procs[r].exit(code)
        self._with_ops(lambda: self.driver.processes.wait(timeout=5.0))

    def do_pause(self) -> None:
        self._with_ops(lambda: self.driver._do(self.core.pause()))

    def do_activate(self) -> None:
        self._with_ops(lambda: self.driver._do(self.core.activate()))

    def do_suspend(self) -> None:
        self._with_ops(lambda: self.driver._do(self.core.suspend_idle()))

    def do_kill(self, r: int) -> None:
        self._with_ops(lambda: self.driver._do(self.core.kill_trial(r)))

    def do_repoll(self) -> None:
        # The driver answers a waiting process as soon as the core wakes it; the
        # training rows of a turn of its loop are written at its end.
        self.driver.records.flush()


class MasterSide(_Side):
    name = "master"

    def __init__(self, root: str, config: Dict[str, Any], capacity: int,
                 source: Optional[Tuple[str, str]] = None):
        super().__init__(root, config, capacity)
        self.db = Store("sqlite:///" + os.path.join(root, "master.db"))
        self.db.upgrade()
        self.exp_id = self.db.create_experiment(config, b"", owner=OWNER)
        self.killed: List[int] = []

        def delete_files(storage: Any, uuids: List[str]) -> None:
            recording = _RecordingStorage(storage, self.db, self.deletes)
            for uuid in uuids:
                recording.delete(uuid)

        self.host = Experiments(self.db, root, LimitsConfig(), capacity=lambda cfg: capacity,
                                kill_process=self.killed.append,
                                wake=lambda exp_id: None, wake_scheduler=lambda: None,
                                delete_files=delete_files)
        self.run = self.host.build(self.exp_id, config, "PAUSED", os.path.join(root, "model"),
                                   source_checkpoint=source, capacity=capacity)
        self.host.add(self.run)

    @property
    def core(self) -> Any:
        return self.run.core

    def close(self) -> None:
        self.db.close()

    def _t(self, r: int) -> Any:
        return self.run.trials[r]

    def _ask(self, r: int) -> None:
        op = self.run.next_op(self._t(r))
        if op is None:
            self.awaiting.add(r)
            return
        self.awaiting.discard(r)
        self.ops.setdefault(r, []).append(op)

    def do_start(self) -> None:
        self.run.start(activate=True)

    def do_launch(self, r: int) -> None:
        t = self._t(r)
        path, warm = self.run.restore_path(t)
        self.run.started(t)
        self.awaiting.discard(r)
        self.restores.append((r, self._relative(path), warm))

    def do_next_op(self, r: int) -> None:
        self._ask(r)

    def do_train(self, r: int, batches: int, metrics: Dict[str, Any]) -> None:
        t = self._t(r)
        self.run.store_training(self.run.trained(t, [(batches, metrics)]))

    def do_validate(self, r: int, batches: int, report: Dict[str, Any]) -> None:
        self.run.validation(self._t(r), batches, report)

    def do_validate_done(self, r: int, batches: int, report: Dict[str, Any]) -> None:
        self.run.validate_op_completed(self._t(r), report)

    def do_checkpoint(self, r: int, batches: int, uuid: str, meta: Dict[str, Any]) -> None:
        self.run.checkpoint(self._t(r), batches, uuid, self.run.checkpoint_resources(uuid),
                            meta)

    def do_early_exit(self, r: int) -> None:
        self.run.early_exit(self._t(r))

    def do_exit(self, r: int, code: int) -> None:
        self.awaiting.discard(r)
        self.run.process_exited(self._t(r), code)

    def do_pause(self) -> None:
        self.run.pause()

    def do_activate(self) -> None:
        self.run.activate()

    def do_suspend(self) -> None:
        self.run.suspend_idle()

    def do_kill(self, r: int) -> None:
        self.run.kill_trial(self._t(r))

    def do_repoll(self) -> None:
        """Long polls of blocked runners wake and ask again (WakeTrial / StopTrial)."""
        for r in sorted(self.awaiting):
            if self.core.trial(r).state.value in ("RUNNING", "WAITING", "STOPPING"):
                self._ask(r)  # (a process being killed asks nothing more)


# ---------------------------------------------------------------- replaying


def _outcome(side: _Side, event: Tuple[Any, ...]) -> str:
    try:
        side.apply(event)
    except Exception as e:  # noqa: BLE001 - both sides must refuse the same events
        return type(e).__name__
    finally:
        try:
            side.do_repoll()
        except Exception:  # noqa: BLE001
            pass
    return "ok"


def write_checkpoint(root: str, uuid: str, batches: int) -> None:
    d = os.path.join(root, uuid)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "state.bin"), "wb") as f:
        f.write(b"x" * (batches + 1))


class Pair:
    """Both sides over the same config, with per-side checkpoint roots."""

    def __init__(self, tmp: str, recorded: Dict[str, Any], name: str = "adaptive_asha",
                 capacity: int = 2, with_source: bool = False):
        self.sides: List[_Side] = []
        self.roots: List[str] = []
        for cls in (LocalSide, MasterSide):
            root = os.path.join(tmp, cls.name)
            ckpts = os.path.join(root, "checkpoints")
            os.makedirs(ckpts, exist_ok=True)
            config = make_config(ckpts, name)
            source = None
            if with_source:  # a checkpoint of another experiment, in that one's storage
                src_root = os.path.join(root, "source-checkpoints")
                src_uuid = str(uuidlib.UUID(int=999))
                write_checkpoint(src_root, src_uuid, 3)
                source = (src_uuid, os.path.join(src_root, src_uuid))
            recorded["current"][:] = [cls.name]
            self.sides.append(cls(root, config, capacity, source))
            self.roots.append(ckpts)
        self.outcomes: List[Tuple[str, ...]] = []

    def apply(self, event: Tuple[Any, ...]) -> None:
        if event[0] == "checkpoint":
            for root in self.roots:
                write_checkpoint(root, event[3], event[2] + len(event[4].get("format", "")))
        self.outcomes.append(tuple(_outcome(s, event) for s in self.sides))

    def close(self) -> None:
        for s in self.sides:
            s.close()

    def assert_same(self, recorded: Dict[str, Any]) -> None:
        local, master = self.sides
        assert [o for o in self.outcomes if o[0] != o[1]] == []
        assert recorded["local"] == recorded["master"]
        assert local.ops == master.ops
        assert local.restores == master.restores
        assert local.deletes == master.deletes
        mine, theirs = local.records(), master.records()
        for a, b in zip(mine.pop("trials"), theirs.pop("trials")):
            assert {k: v for k, v in a.items() if v != b[k]} == \
                {k: v for k, v in b.items() if v != a[k]}, a["request_id"]
        assert mine == theirs


def ck(n: int) -> str:
    return str(uuidlib.UUID(int=n))


def _report(value: float) -> Dict[str, Any]:
    return {"validation_metrics": {"loss": value}, "num_inputs": 16}


def _train(value: float) -> Dict[str, Any]:
    return {"avg_metrics": {"loss": value}, "batch_metrics": [{"loss": value}],
            "num_inputs": 8}


SCRIPT: List[Tuple[Any, ...]] = [
    ("start",),
    ("launch", 1), ("launch", 2),
    ("next_op", 1), ("train", 1, 2, _train(0.9)), ("next_op", 1),
    ("validate", 1, 2, _report(0.8)), ("validate_done", 1, 2, _report(0.8)),
    ("checkpoint", 1, 2, ck(1), {"framework": "torch", "format": "pickle"}),
    ("checkpoint", 1, 2, ck(1), {"framework": "torch", "format": "pickle"}),  # a retry
    ("next_op", 2), ("train", 2, 2, _train(0.7)), ("next_op", 2),
    ("validate", 2, 2, _report(0.5)), ("validate_done", 2, 2, _report(0.5)),
    ("checkpoint", 2, 2, ck(2), {"framework": "torch", "format": "pickle"}),
    ("exit", 2, 1),  # crashes after its checkpoint: restarts from it
    ("next_op", 1), ("next_op", 1),  # idles: waiting for the searcher
    ("suspend",),  # the idle trial gives its slot back
    ("next_op", 1), ("exit", 1, 0),
    ("launch", 2), ("next_op", 2), ("train", 2, 4, _train(0.4)),
    ("pause",), ("next_op", 2),
    ("checkpoint", 2, 4, ck(3), {"framework": "torch", "format": "pickle"}),
    ("exit", 2, 0),
    ("activate",),
    ("launch", 3), ("next_op", 3), ("kill", 3), ("exit", 3, -9),
    ("launch", 4), ("next_op", 4), ("train", 4, 2, _train(float("nan"))), ("next_op", 4),
    ("validate", 4, 2, _report(float("nan"))), ("validate_done", 4, 2, _report(float("nan"))),
    ("checkpoint", 4, 2, ck(4), {"framework": "torch", "format": "pickle"}),
    ("early_exit", 4), ("next_op", 4), ("exit", 4, 0),
    ("launch", 2), ("next_op", 2), ("next_op", 2), ("validate", 2, 4, _report(0.3)),
    ("validate_done", 2, 4, _report(0.3)), ("next_op", 2),
    ("checkpoint", 2, 4, ck(3), {"framework": "tf", "format": "saved"}),  # a conflict
    ("checkpoint", 2, 8, ck(5), {"framework": "torch", "format": "pickle"}),
    ("next_op", 2), ("next_op", 2), ("exit", 2, 0),
    ("kill", 1),  # the idle trial: the search ends, GC deletes what it does not keep
]


def test_one_script_gives_the_same_records_on_both_adapters(tmp_path: Any,
                                                           recorded: Any) -> None:
    pair = Pair(str(tmp_path), recorded, with_source=True)
    try:
        for event in SCRIPT:
            pair.apply(event)
        pair.assert_same(recorded)
        assert ("on_capacity_changed", 2) in recorded["local"]
        # The warm start reads the source experiment's storage.
        local, master = pair.sides
        assert local.restores[0][1].startswith("source-checkpoints")
        assert local.deletes and all(state == "DELETED" for _, state in local.deletes)
    finally:
        pair.close()


# ---------------------------------------------------------------- random sequences


@st.composite
def _events(draw: Any, pair: Pair, steps: int) -> None:
    """Plays ``steps`` events drawn against the local side's state (what a transport
    could deliver: reports only from trials with a process)."""
    core = pair.sides[0].core
    seq = [0]
    for _ in range(steps):
        live = sorted(core.live())
        sched = core.schedulable()
        choices: List[str] = ["pause", "activate", "suspend"]
        if sched:
            choices += ["launch"] * 4
        if live:
            choices += ["next_op"] * 6 + ["train", "validate", "validate_done", "checkpoint",
                                          "exit", "kill", "early_exit", "crash"]
        kind = draw(st.sampled_from(choices))
        if kind in ("pause", "activate", "suspend"):
            event: Tuple[Any, ...] = (kind,)
        elif kind == "launch":
            event = ("launch", draw(st.sampled_from(sched)))
        else:
            r = draw(st.sampled_from(live))
            t = core.trial(r)
            batches = t.batches + draw(st.integers(0, 3))
            if kind == "train":
                event = ("train", r, batches, _train(0.5))
            elif kind == "validate":
                value = draw(st.sampled_from([0.1, 0.5, 0.9, float("nan")]))
                event = ("validate", r, batches, _report(value))
            elif kind == "validate_done":
                event = ("validate_done", r, batches, _report(0.5))
            elif kind == "checkpoint":
                known = sorted(core.checkpoints)
                if known and draw(st.booleans()):
                    uuid = draw(st.sampled_from(known))
                    c = core.checkpoints[uuid]
                    same = draw(st.booleans())
                    b = c["batches"] if same else batches
                    meta = {"framework": "torch", "format": "pickle" if same else "other"}
                    event = ("checkpoint", r if same else r, b, uuid, meta)
                else:
                    seq[0] += 1
                    event = ("checkpoint", r, batches, ck(1000 + seq[0]),
                             {"framework": "torch", "format": "pickle"})
            elif kind == "exit":
                event = ("exit", r, 0)
            elif kind == "crash":
                event = ("exit", r, draw(st.sampled_from([1, -9])))
            else:
                event = (kind, r)
        pair.apply(event)
        if core.finished:
            return


@settings(max_examples=30, deadline=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), name=st.sampled_from(["adaptive_asha", "random"]),
       capacity=st.integers(1, 3))
def test_random_sequences_give_the_same_records(tmp_path_factory: Any, recorded: Any,
                                                data: Any, name: str, capacity: int) -> None:
    for key in ("local", "master"):
        recorded[key].clear()
    pair = Pair(str(tmp_path_factory.mktemp("pair")), recorded, name, capacity)
    try:
        pair.apply(("start",))
        data.draw(_events(pair, 50))
        pair.assert_same(recorded)
    finally:
        pair.close()
