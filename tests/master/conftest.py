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
