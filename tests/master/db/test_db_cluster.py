"""Agents, users and tokens, on every backend."""

import pytest

from determined.master.db import ConflictError, NotFoundError, Store


def test_agents(store: Store) -> None:
    assert store.list_agents() == []
    a = store.upsert_agent("agent-b", 4, "gpu")
    assert (a.id, a.slots, a.label, a.enabled) == ("agent-b", 4, "gpu", True)
    store.upsert_agent("agent-a", 2, "")
    assert store.set_agent_enabled("agent-b", False).enabled is False
    again = store.upsert_agent("agent-b", 8, "gpu")  # reconnect keeps the admin's choice
    assert (again.slots, again.enabled, again.registered_at) == (8, False, a.registered_at)
    assert again.last_seen >= a.last_seen
    assert store.upsert_agent("agent-b", 8, "gpu", enabled=True).enabled is True
    assert [x.id for x in store.list_agents()] == ["agent-a", "agent-b"]
    with pytest.raises(NotFoundError, match="agent 'nope'"):
        store.set_agent_enabled("nope", True)
    with pytest.raises(ValueError, match="slots"):
        store.upsert_agent("x", -1)


def test_users_and_passwords(store: Store) -> None:
    alice = store.create_user("alice", admin=True, password="s3cret")
    assert alice.admin and alice.active and alice.has_password
    with pytest.raises(ConflictError, match="alice"):
        store.create_user("alice")
    assert store.check_user_password("alice", "s3cret")
    assert not store.check_user_password("alice", "")
    assert not store.check_user_password("nobody", "")
    store.set_user_password("alice", "")
    assert store.check_user_password("alice", "") and not store.get_user("alice").has_password
    store.update_user("alice", active=False)
    assert not store.check_user_password("alice", "")
    renamed = store.update_user("alice", new_name="alicia", active=True, admin=False)
    assert (renamed.username, renamed.active, renamed.admin) == ("alicia", True, False)
    with pytest.raises(NotFoundError):
        store.get_user("alice")
    with pytest.raises(ConflictError):
        store.update_user("alicia", new_name="admin")
    assert [u.username for u in store.list_users()] == ["admin", "determined", "alicia"]


def test_trial_tokens(store: Store, trial_id: int, make_experiment) -> None:
    token = store.create_trial_token(trial_id)
    other = store.create_trial(make_experiment(), "r", {}, 1)
    other_token = store.create_trial_token(other)
    assert isinstance(token, str) and len(token) >= 32 and token != other_token
    assert store.check_trial_token(token) == trial_id
    assert store.check_trial_token(other_token) == other
    assert store.check_trial_token(token + "x") is None
    assert store.check_trial_token("") is None
    with pytest.raises(NotFoundError, match="trial 999"):
        store.create_trial_token(999)
    assert store.revoke_trial_tokens(trial_id) == 1
    assert store.check_trial_token(token) is None
    assert store.check_trial_token(other_token) == other


def test_a_replacing_trial_token_revokes_the_earlier_ones(store: Store, trial_id: int,
                                                          make_experiment) -> None:
    first, second = store.create_trial_token(trial_id), store.create_trial_token(trial_id)
    other = store.create_trial(make_experiment(), "r", {}, 1)
    other_token = store.create_trial_token(other)
    new = store.create_trial_token(trial_id, replace=True)
    assert store.check_trial_token(new) == trial_id
    assert store.check_trial_token(first) is None and store.check_trial_token(second) is None
    assert store.check_trial_token(other_token) == other
    assert store.revoke_trial_tokens(trial_id) == 1  # only the new one was left
    with pytest.raises(NotFoundError, match="trial 999"):
        store.create_trial_token(999, replace=True)


def test_tokens_are_stored_hashed(store: Store, trial_id: int) -> None:
    import sqlalchemy as sa

    token = store.create_trial_token(trial_id)
    engine = sa.create_engine(store.url)
    try:
        with engine.connect() as conn:
            stored = [row[0] for row in conn.execute(sa.text("SELECT token_hash FROM auth_tokens"))]
    finally:
        engine.dispose()
    assert len(stored) == 1 and token not in stored[0] and len(stored[0]) == 64


def test_user_tokens(store: Store) -> None:
    token = store.create_user_token("determined")
    assert store.check_user_token(token).username == "determined"
    assert store.check_trial_token(token) is None  # a user token is not a trial token
    store.update_user("determined", active=False)
    assert store.check_user_token(token) is None
    store.update_user("determined", active=True)
    assert store.revoke_user_token(token) is True
    assert store.check_user_token(token) is None
    assert store.revoke_user_token(token) is False
    with pytest.raises(NotFoundError):
        store.create_user_token("nobody")
