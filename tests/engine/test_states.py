"""Experiment states have one transition table, in the engine; the store checks stored
changes against the same table."""

from __future__ import annotations

import pytest

from determined import engine
from determined.engine import ExperimentCore

from test_engine_core import make_config


def test_the_store_checks_experiment_states_against_the_engines_table() -> None:
    from determined.master.db import EXPERIMENT_TRANSITIONS as stored

    assert stored == {old.value: {new.value for new in news}
                      for old, news in engine.EXPERIMENT_TRANSITIONS.items()}
    core = ExperimentCore(make_config("single"))
    core.start()
    with pytest.raises(engine.EngineError, match="cannot move from ACTIVE to COMPLETED"):
        core._set_state(engine.ExperimentState.COMPLETED)


@pytest.mark.parametrize("state", ["ERROR", "CANCELED"])
def test_abort_kills_processes_and_ends_every_trial(state: str) -> None:
    core = ExperimentCore(make_config("random"))
    core.start()
    core.trial_started(1)
    effects = core.abort(state, "the driver failed")
    kinds = [type(e).__name__ for e in effects]
    assert kinds.count("KillTrial") == 1  # only trial 1 has a process
    assert all(t.state is engine.TrialState.CANCELED for t in core.trials.values())
    assert [e.state for e in effects if isinstance(e, engine.SetExperimentState)] == [
        "STOPPING_" + state, state]
    assert isinstance(effects[-1], engine.FinishExperiment) and effects[-1].state == state
    assert core.reason == "the driver failed" and core.abort(state) == []
    with pytest.raises(engine.EngineError, match="ERROR or CANCELED"):
        ExperimentCore(make_config("random")).abort("COMPLETED")
