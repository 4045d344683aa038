"""One fixture, ``store``, runs every test on each backend: SQLite (a temp file) and a
real PostgreSQL server started by tests/master/pg_testing.py (initdb + pg_ctl in a temp dir).

The PostgreSQL cases fail when the server binaries or the driver are missing, unless
``DET_TEST_NO_POSTGRES=1`` is set (they are skipped then).
"""

from typing import Iterator

import pytest

from determined.master.db import Store

BACKENDS = ["sqlite", "postgresql"]

# The session fixture ``postgres_server`` is in tests/master/conftest.py (pg_testing.py).


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """A fresh, empty database on each backend (not migrated)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/master.db"
    return request.getfixturevalue("postgres_server").new_database()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path) -> Iterator[Store]:
    """A migrated :class:`Store` on each backend (its database is at ``store.url``)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/master.db"
    else:
        url = request.getfixturevalue("postgres_server").new_database(migrated=True)
    s = Store(url)
    s.upgrade()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def make_experiment(store: Store):
    """Create an experiment (default config) and return its id."""

    def make(**kwargs) -> int:
        kwargs.setdefault("config", {"description": "test", "searcher": {"name": "single"}})
        kwargs.setdefault("model_def", b"model")
        kwargs.setdefault("owner", "determined")
        return store.create_experiment(**kwargs)

    return make


@pytest.fixture
def trial_id(store: Store, make_experiment) -> int:
    """An ACTIVE trial in a fresh experiment."""
    return store.create_trial(make_experiment(), "r1", {"lr": 0.1}, seed=7)
