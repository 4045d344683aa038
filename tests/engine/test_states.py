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
