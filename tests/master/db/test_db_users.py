"""Login sessions (expiring tokens) on every backend, and migration 0001 -> 0002."""

import datetime
import hashlib

import pytest
import sqlalchemy as sa

from determined.master.db import Store
from determined.master.db._engine import run_upgrade
from determined.master.db._types import JSONText, UTCDateTime, utcnow
from determined.master.db._users import AuthenticationError


def test_login_and_sessions(store: Store) -> None:
    store.create_user("alice", password="s3cret")
    token, user = store.login("alice", "s3cret")
    assert (user.username, user.admin, user.active) == ("alice", False, True)
    assert store.session_user(token).username == "alice"
    other, _ = store.login("alice", "s3cret")
    assert other != token and store.session_user(other).username == "alice"
    # A session token is not a trial token, and vice versa.
    assert store.check_trial_token(token) is None
    assert store.trial_token_owner(token) is None

    assert store.logout(token) is True
    assert store.logout(token) is False
    assert store.session_user(token) is None
    assert store.session_user(other).username == "alice"
    assert store.session_user("") is None and store.session_user("nope") is None


def test_bad_logins(store: Store) -> None:
    store.create_user("bob", password="pw")
    for name, password in [("bob", "wrong"), ("bob", ""), ("nobody", "")]:
        with pytest.raises(AuthenticationError, match="^Invalid username or password$"):
            store.login(name, password)
    store.update_user("bob", active=False)
    with pytest.raises(AuthenticationError, match="'bob' is deactivated") as refused:
        store.login("bob", "pw")
    assert refused.value.deactivated
    # The deactivated user is told so only after the right password.
    with pytest.raises(AuthenticationError, match="Invalid username or password"):
        store.login("bob", "wrong")
    with pytest.raises(ValueError, match="Expected ttl to be"):
        store.login("admin", "", ttl=-1)
    with pytest.raises(ValueError, match="Expected password to be a str"):
        store.login("admin", None)  # type: ignore[arg-type]


def test_sessions_expire(store: Store) -> None:
    expired, _ = store.login("admin", "", ttl=0)
    assert store.session_user(expired) is None
    live, _ = store.login("admin", "")
    assert store.session_user(live).admin
    # A deactivated user's session still resolves; the API refuses it by ``active``.
    store.create_user("carol")
    carol, _ = store.login("carol", "")
    store.update_user("carol", active=False)
    assert store.session_user(carol).active is False
    store.login("determined", "", ttl=0)
    assert store.purge_expired_sessions() >= 1
    assert store.session_user(live) is not None


def test_trial_token_acts_as_experiment_owner(store: Store) -> None:
    store.create_user("dave")
    exp = store.create_experiment({"searcher": {"name": "single"}}, b"m", owner="dave")
    trial = store.create_trial(exp, "r1", {}, seed=1)
    token = store.create_trial_token(trial)
    assert store.trial_token_owner(token).username == "dave"
    assert store.session_user(token) is None
    assert store.trial_token_owner("unknown") is None


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def test_migration_from_0001_keeps_data_and_dates_old_sessions(db_url: str) -> None:
    tokens = sa.table(
        "auth_tokens", sa.column("token_hash"), sa.column("kind"), sa.column("trial_id"),
        sa.column("user_id"), sa.column("created_at", UTCDateTime()),
    )
    now = utcnow()
    with Store(db_url) as store:
        assert run_upgrade(store._engines, "0001") == (None, "0001")
        assert store.schema_revision() == "0001"
        with store._engines.write.begin() as conn:
            user_ids = dict(conn.execute(sa.text("SELECT username, id FROM users")).all())
            # The 0001 columns only (the ORM's model has later revisions' columns too).
            experiments = sa.table(
                "experiments", sa.column("state"), sa.column("config", JSONText()),
                sa.column("model_def"), sa.column("owner_id"), sa.column("description"),
                sa.column("labels", JSONText()), sa.column("archived"), sa.column("weight"),
                sa.column("start_time", UTCDateTime()))
            conn.execute(sa.insert(experiments).values(
                state="PAUSED", config={"searcher": {"name": "single"}}, model_def=b"m",
                owner_id=user_ids["admin"], description="", labels=[], archived=False,
                weight=1.0, start_time=now))
            exp = conn.execute(sa.text("SELECT max(id) FROM experiments")).scalar_one()
            trials = sa.table(
                "trials", sa.column("experiment_id"), sa.column("request_id"),
                sa.column("state"), sa.column("hparams", JSONText()), sa.column("seed"),
                sa.column("restarts"), sa.column("total_batches"),
                sa.column("start_time", UTCDateTime()))
            conn.execute(sa.insert(trials).values(
                experiment_id=exp, request_id="r1", state="ACTIVE", hparams={"lr": 1}, seed=3,
                restarts=0, total_batches=0, start_time=now))
            trial = conn.execute(sa.text("SELECT max(id) FROM trials")).scalar_one()
            conn.execute(sa.insert(tokens), [
                {"token_hash": _hash("fresh"), "kind": "user", "trial_id": None,
                 "user_id": user_ids["determined"], "created_at": now},
                {"token_hash": _hash("stale"), "kind": "user", "trial_id": None,
                 "user_id": user_ids["admin"], "created_at": now - datetime.timedelta(days=8)},
                {"token_hash": _hash("runner"), "kind": "trial", "trial_id": trial,
                 "user_id": None, "created_at": now - datetime.timedelta(days=30)},
            ])
    with Store(db_url) as store:
        assert store.upgrade() == "0017"
        assert store.get_experiment(exp).owner == "admin"
        assert store.get_trial(trial).hparams == {"lr": 1}
        assert [u.username for u in store.list_users()] == ["admin", "determined"]
        assert store.session_user("fresh").username == "determined"
        assert store.session_user("stale") is None  # older than the 7 days sessions last
        assert store.check_trial_token("runner") == trial  # trial tokens never expire
        assert store.trial_token_owner("runner").username == "admin"
        with store._engines.read.connect() as conn:
            expiry = dict(conn.execute(sa.select(
                sa.column("token_hash"), sa.column("expires_at", UTCDateTime()),
            ).select_from(sa.table("auth_tokens"))).all())
        assert expiry[_hash("runner")] is None
        assert abs(expiry[_hash("fresh")] - (now + datetime.timedelta(days=7))) < \
            datetime.timedelta(seconds=1)
        assert store.upgrade() == "0017"
