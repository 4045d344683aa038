"""A throwaway PostgreSQL server for tests (initdb + pg_ctl in a temp dir).

Used by the ``postgres_server`` fixture in ``tests/master/conftest.py`` (the db tests
and the end-to-end tests of the master on PostgreSQL). Missing server binaries or
driver fail the tests, unless ``DET_TEST_NO_POSTGRES=1`` is set (they are skipped then).
"""

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from typing import List, Optional

import pytest

from determined.master.db import Store

NO_POSTGRES_VAR = "DET_TEST_NO_POSTGRES"


def _pg_bindir() -> Optional[str]:
    def version(bindir: str) -> int:
        name = bindir.split("/")[-2]
        return int(name) if name.isdigit() else 0

    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    which = shutil.which("pg_ctl")
    if which:
        candidates.append(os.path.dirname(os.path.realpath(which)))
    for d in candidates:
        if all(os.access(os.path.join(d, tool), os.X_OK) for tool in ("initdb", "pg_ctl")):
            return d
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """A throwaway PostgreSQL cluster: trust auth, no fsync, one database per test."""

    def __init__(self, bindir: str):
        self.bindir = bindir
        self.dir = tempfile.mkdtemp(prefix="det-pg-")
        self.port = _free_port()
        self._as_user: List[str] = []
        if os.geteuid() == 0:
            # PostgreSQL refuses to run as root.
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                pytest.fail(
                    "PostgreSQL cannot run as root and there is no 'postgres' user to run it "
                    "(apt-get install -y postgresql creates one)",
                    pytrace=False,
                )
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self._as_user = ["runuser", "-u", "postgres", "--"]
        self._names = itertools.count()
        self._migrated_template: Optional[str] = None
        self._data = os.path.join(self.dir, "data")
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        )
        log = os.path.join(self.dir, "server.log")
        try:
            data = self._data
            self._run("initdb", "-D", data, "-U", "det", "-A", "trust", "-E", "UTF8", "--no-sync")
            self._run("pg_ctl", "-D", data, "-l", log, "-o", options, "-w", "-t", "60", "start")
        except BaseException:
            self.stop()
            raise

    def _run(self, tool: str, *args: str) -> None:
        cmd = [*self._as_user, os.path.join(self.bindir, tool), *args]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            log = ""
            log_path = os.path.join(self.dir, "server.log")
            if os.path.exists(log_path):
                with open(log_path) as f:
                    log = f.read()[-3000:]
            pytest.fail(
                f"{' '.join(cmd)} failed:\n{result.stdout}\n{result.stderr}\n{log}", pytrace=False
            )

    def new_database(self, migrated: bool = False) -> str:
        """A new database; ``migrated`` copies one already upgraded (faster than upgrading)."""
        import psycopg

        template = None
        if migrated:
            if self._migrated_template is None:
                url = self.new_database()
                with Store(url) as store:
                    store.upgrade()
                self._migrated_template = url.rsplit("/", 1)[1]
            template = self._migrated_template
        name = f"det_test_{next(self._names)}"
        dsn = f"host=127.0.0.1 port={self.port} user=det dbname=postgres"
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
        return f"postgresql+psycopg://det@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        subprocess.run(
            [*self._as_user, os.path.join(self.bindir, "pg_ctl"), "-D", self._data,
             "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(self.dir, ignore_errors=True)


def start_postgres() -> PostgresServer:
    """Start a server, or skip (``DET_TEST_NO_POSTGRES=1``) / fail naming what is missing."""
    if os.environ.get(NO_POSTGRES_VAR) == "1":
        pytest.skip(f"{NO_POSTGRES_VAR}=1: PostgreSQL cases skipped")
    bindir = _pg_bindir()
    if bindir is None:
        pytest.fail(
            "PostgreSQL server binaries (initdb, pg_ctl) not found under /usr/lib/postgresql/*/bin "
            "or on PATH: install PostgreSQL (apt-get install -y postgresql), or set "
            f"{NO_POSTGRES_VAR}=1 to skip the PostgreSQL cases",
            pytrace=False,
        )
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.fail(
            "The PostgreSQL driver is missing: pip install 'psycopg[binary]' (or set "
            f"{NO_POSTGRES_VAR}=1 to skip the PostgreSQL cases)",
            pytrace=False,
        )
    return PostgresServer(bindir)
