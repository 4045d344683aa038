"""With ``security.allow_anonymous: false`` the seeded blank admin password opens
nothing: an admin's blank-password login gets a 401 saying how to set a password, the master logs the same for
each admin at start, and ``--set-password`` sets one from the operator's shell."""

import subprocess
import sys

import httpx

from master_testing import ConfiguredMasterProcess


def test_blank_password_cannot_log_in_without_anonymous_access(tmp_path):
    data_dir = tmp_path / "master"
    data_dir.mkdir()
    master = ConfiguredMasterProcess(str(data_dir), {
        "security": {"allow_anonymous": False}, "resource_manager": {"slots": 0}}).start()
    try:
        with httpx.Client(base_url=master.url + "/api/v1", timeout=30) as c:
            r = c.post("/auth/login", json={"username": "admin", "password": ""})
            assert r.status_code == 401, r.text
            assert "--set-password admin" in r.json()["error"]
            # Without a login nothing else opens either (an agent cannot register).
            assert c.post("/agents/rogue/register", json={"slots": 1}).status_code == 401
            set_pw = subprocess.run(
                [sys.executable, "-m", "determined.master", "--config", master.config_path,
                 "--set-password", "admin"], input="s3cret\n", capture_output=True,
                text=True, timeout=120)
            assert set_pw.returncode == 0, set_pw.stderr
            r = c.post("/auth/login", json={"username": "admin", "password": "s3cret"})
            assert r.status_code == 200, r.text
            assert c.post("/auth/login", json={"username": "admin",
                                                "password": ""}).status_code == 401
            # An admin made later with a blank password is refused the same way.
            admin = {"Authorization": "Bearer " + r.json()["token"]}
            assert c.post("/users", json={"username": "ops", "admin": True},
                          headers=admin).status_code == 201
            r = c.post("/auth/login", json={"username": "ops", "password": ""})
            assert r.status_code == 401 and "--set-password ops" in r.text, r.text
        blank = subprocess.run(
            [sys.executable, "-m", "determined.master", "--config", master.config_path,
             "--set-password", "admin"], input="\n", capture_output=True, text=True,
            timeout=120)
        assert blank.returncode == 2 and "non-empty password" in blank.stderr
    finally:
        master.stop()
    log = open(data_dir / "master-test.log").read()
    assert "admin 'admin' has a blank password" in log and "--set-password admin" in log
