"""Fixtures starting a real master on a free loopback port (helpers in master_testing.py)."""

import os
from typing import Any, Iterator, List, Optional

import pytest

from master_testing import MasterProcess


@pytest.fixture
def master_factory(tmp_path) -> Iterator[Any]:
    started: List[MasterProcess] = []

    def make(slots: int = 2, data_dir: Optional[str] = None, port: Optional[int] = None):
        d = data_dir or str(tmp_path / f"master{len(started)}")
        os.makedirs(d, exist_ok=True)
        m = MasterProcess(d, slots, port).start()
        started.append(m)
        return m

    yield make
    for m in started:
        m.stop()


@pytest.fixture(scope="module")
def shared_master(tmp_path_factory) -> Iterator[MasterProcess]:
    m = MasterProcess(str(tmp_path_factory.mktemp("master")), slots=2).start()
    yield m
    m.stop()


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server for the session (see pg_testing.py: skipped with
    DET_TEST_NO_POSTGRES=1, failing if PostgreSQL is not installed)."""
    from pg_testing import start_postgres

    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def config_master_factory(tmp_path) -> Iterator[Any]:
    """Start masters from a master config (a dict written to YAML): ``make(config, ...)``."""
    from master_testing import ConfiguredMasterProcess

    started: List[MasterProcess] = []

    def make(config: dict, data_dir: Optional[str] = None, port: Optional[int] = None):
        d = data_dir or str(tmp_path / f"cmaster{len(started)}")
        os.makedirs(d, exist_ok=True)
        m = ConfiguredMasterProcess(d, config, port).start()
        started.append(m)
        return m

    yield make
    for m in started:
        m.stop()
