"""Every resource manager keeps the one ``ResourceManager`` contract, and the composite
sends each call to the manager owning the agent (real registries, no processes)."""

import inspect
import threading

import pytest

from determined.master.resource_managers import (
    CompositeResourceManager,
    EmbeddedResourceManager,
    RemoteResourceManager,
    ResourceManager,
    TrialLaunch,
)
from determined.master.resource_managers._ray import RayResourceManager

MEMBERS = [n for n in dir(ResourceManager) if not n.startswith("_")]


@pytest.mark.parametrize("cls", [EmbeddedResourceManager, RemoteResourceManager,
                                 RayResourceManager, CompositeResourceManager])
def test_every_manager_has_the_protocol_members_with_its_parameters(cls):
    assert {"launch", "kill", "holds", "agents", "can_span", "launch_task"} <= set(MEMBERS)
    for name in MEMBERS:
        want = getattr(ResourceManager, name)
        if isinstance(want, property):
            continue  # ``slots``: a property or an attribute set in __init__
        got = getattr(cls, name, None)
        assert callable(got), f"{cls.__name__} lacks {name}()"
        assert (list(inspect.signature(got).parameters)
                == list(inspect.signature(want).parameters)), f"{cls.__name__}.{name}"


class _Exits:
    def __init__(self):
        self.exits, self.logs = [], []
        self.done = threading.Event()

    def on_exit(self, trial_id, code):
        self.exits.append((trial_id, code))
        self.done.set()


def _launch(trial_id, *parts):
    return TrialLaunch(trial_id, 1, tuple((a, tuple(s)) for a, s in parts),
                       {"DET_MASTER": "http://m", "DET_TRIAL_TOKEN": "tok",
                        "DET_TRIAL_SPEC": "/master/only/spec.json"},
                       {"env": {}}, "/master/model_def")


def test_composite_dispatches_to_the_owner_of_the_agent():
    rec = _Exits()
    remote = RemoteResourceManager(rec.on_exit, lambda t, lines: rec.logs.append((t, lines)))
    rm = CompositeResourceManager(None, remote)
    try:
        session = remote.register("a1", 2)["session"]
        remote.register("a2", 1)
        assert rm.slots == 3 and [a.id for a in rm.agents()] == ["a1", "a2"]
        assert rm.has_agent("a1") and not rm.has_agent("embedded")
        assert rm.launch(_launch(7, ("a1", (0, 1)))) is None
        [command] = remote.poll("a1", session, 0)
        # The agent gets the token and the spec, never the master's paths.
        assert command["type"] == "launch" and command["env"] == {"DET_TRIAL_TOKEN": "tok"}
        assert rm.holds(7) and not rm.holds(8)
        rm.kill(7)
        assert remote.poll("a1", session, 0) == [
            {"type": "kill", "launch_id": command["launch_id"]}]
        assert rm.can_span([("a1", (0,)), ("a2", (0,))])
        assert not rm.can_span([("a1", (0,)), ("gone", (0,))])
        with pytest.raises(RuntimeError, match="'gone' is not connected"):
            rm.launch(_launch(9, ("gone", (0,))))
        assert rm.runs_tasks("a1") and not rm.runs_tasks("gone")
        launch_id = rm.launch_task("a2", "cmd-1", {"kind": "command"})
        assert rm.holds_task("cmd-1") and launch_id
        with pytest.raises(RuntimeError, match="takes no tasks"):
            rm.launch_task("gone", "cmd-2", {})
    finally:
        rm.close()


def test_a_trial_launch_needs_a_part():
    with pytest.raises(ValueError, match="at least one .agent_id, slot_ids. part for trial 3"):
        TrialLaunch(3, 1, (), {}, {}, "/m")
