"""Users, login and ownership against a real master: ``det user``, the REST API, the SDK."""

import base64
import json
import os
import stat
import subprocess
import sys
import time
from typing import Any, Dict, Optional

import httpx
import pytest
import yaml

from det_cli_testing import run_det_in_terminal
from determined.common.api import pack_context
from determined.errors import MasterError
from determined.experimental import Determined
from master_testing import set_password, slow_model_dir, wait_for_state


# Seconds a session lasts in test_no_anonymous_access: short, so the test sees one expire,
# yet long enough that a token used a moment after its login (a `det` process exiting, a
# few requests) is still valid on a loaded machine.
SESSION_TTL = 10


def det(master: Any, *args: str, input: str = "", user: Optional[str] = None,
        check: bool = True) -> subprocess.CompletedProcess:
    """The real ``det`` (stdin piped, so it never prompts); ``check`` wants exit 0."""
    cmd = [sys.executable, "-m", "determined.cli", "-m", master.url]
    if user is not None:
        cmd += ["-u", user]
    result = subprocess.run([*cmd, *args], input=input, capture_output=True, text=True,
                            timeout=120)
    if check:
        assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result


def login(master: Any, username: str, password: str = "") -> Dict[str, str]:
    """A session's bearer header, from ``POST /auth/login``."""
    r = httpx.post(master.url + "/api/v1/auth/login",
                   json={"username": username, "password": password})
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['token']}"}


def auth_cache() -> Dict[str, Any]:
    with open(os.path.join(os.environ["DET_AUTH_DIR"], "auth.json")) as f:
        return json.load(f)


def test_login_logout_whoami(shared_master) -> None:
    m = shared_master
    # No cached token: det logs in by itself as `determined` (blank password).
    assert "logged in as user 'determined'" in det(m, "user", "whoami").stdout
    path = os.path.join(os.environ["DET_AUTH_DIR"], "auth.json")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    entry = auth_cache()["masters"][m.url]
    assert entry["active_user"] == "determined" and entry["tokens"]["determined"]

    assert "Logged in as user 'admin'" in det(m, "user", "login", "admin", "--password", "").stdout
    assert "'admin' (admin)" in det(m, "user", "whoami").stdout  # admin is now active
    assert "'determined'" in det(m, "user", "whoami", user="determined").stdout
    admin_token = auth_cache()["masters"][m.url]["tokens"]["admin"]

    assert "Logged out user 'admin'" in det(m, "user", "logout").stdout
    assert "admin" not in auth_cache()["masters"][m.url]["tokens"]
    # The session is gone on the master too.
    r = httpx.get(m.url + "/api/v1/me", headers={"Authorization": f"Bearer {admin_token}"})
    assert r.status_code == 401 and "Invalid or expired session token" in r.json()["error"]
    assert "'determined'" in det(m, "user", "whoami").stdout

    users = json.loads(det(m, "user", "list", "--json").stdout)
    assert {(u["username"], u["admin"], u["active"]) for u in users} >= {
        ("admin", True, True), ("determined", False, True)}
    assert "username,admin,active" in det(m, "u", "--csv").stdout  # `list` is the default


def test_users_admin_commands(shared_master) -> None:
    m = shared_master
    # Only admins create users.
    denied = det(m, "user", "create", "mallory", check=False)
    assert denied.returncode == 1
    assert "Only an admin can create users; 'determined' is not one (HTTP 403)" in denied.stderr
    det(m, "user", "create", "alice", "--password", "pw1", user="admin")
    taken = det(m, "user", "create", "alice", user="admin", check=False)
    assert taken.returncode == 1 and "already exists (HTTP 409)" in taken.stderr
    bad = det(m, "user", "create", "has space", user="admin", check=False)
    assert "Expected username to be 1-255 characters without spaces" in bad.stderr

    # A bad password: 401 with a clear message (API and CLI).
    r = httpx.post(m.url + "/api/v1/auth/login", json={"username": "alice", "password": "no"})
    assert r.status_code == 401 and r.json() == {"error": "Invalid username or password"}
    failed = det(m, "user", "login", "alice", input="no\n", check=False)
    assert failed.returncode == 1 and "Invalid username or password (HTTP 401)" in failed.stderr

    # Password from piped stdin.
    assert "Logged in as user 'alice'" in det(m, "user", "login", "alice", input="pw1\n").stdout
    assert "'alice'" in det(m, "user", "whoami").stdout

    # Deactivated: the session stops working and a new login is refused (403).
    det(m, "user", "deactivate", "alice", user="admin")
    blocked = det(m, "user", "whoami", check=False)
    assert blocked.returncode == 1
    assert "User 'alice' is deactivated; an admin can run `det user activate alice` (HTTP 403)" \
        in blocked.stderr
    r = httpx.post(m.url + "/api/v1/auth/login", json={"username": "alice", "password": "pw1"})
    assert r.status_code == 403 and "'alice' is deactivated" in r.json()["error"]
    refused = det(m, "user", "login", "alice", "--password", "pw1", check=False)
    assert refused.returncode == 1 and "'alice' is deactivated" in refused.stderr
    not_admin = det(m, "user", "activate", "alice", user="determined", check=False)
    assert "Only an admin can change users (active)" in not_admin.stderr
    det(m, "user", "activate", "alice", user="admin")
    assert "'alice'" in det(m, "user", "whoami").stdout  # the session works again

    # change-password: oneself (stdin), or another user only as an admin.
    det(m, "user", "change-password", input="pw2\n")
    assert httpx.post(m.url + "/api/v1/auth/login",
                      json={"username": "alice", "password": "pw1"}).status_code == 401
    login(m, "alice", "pw2")
    other = det(m, "user", "change-password", "admin", "--password", "x", check=False)
    assert "Only an admin can change the password of 'admin'" in other.stderr
    det(m, "user", "change-password", "alice", "--password", "pw3", user="admin")
    login(m, "alice", "pw3")

    # rename: the cached session follows the new name.
    det(m, "user", "rename", "alice", "alicia", user="admin")
    assert "'alicia'" in det(m, "user", "whoami", user="alicia").stdout
    assert "alice" not in auth_cache()["masters"][m.url]["tokens"]
    missing = det(m, "user", "rename", "nobody", "x", user="admin", check=False)
    assert "user 'nobody' not found (HTTP 404)" in missing.stderr


def test_no_password_on_stdin_changes_nothing(shared_master) -> None:
    """``det user change-password </dev/null`` set a blank password without a word; now
    stdin that ends, or a blank line, is a one-line error and the password stays."""
    m = shared_master
    det(m, "user", "create", "paula", "--password", "pw1", user="admin")
    det(m, "user", "login", "paula", "--password", "pw1")
    for stdin, why in (("", "No password on stdin (it ended before a line)"),
                       ("\n", "The password read is blank")):
        refused = det(m, "user", "change-password", input=stdin, check=False)
        assert refused.returncode == 1, refused.stdout
        assert refused.stderr.strip().splitlines() == [
            f"det: error: {why}; nothing was changed"
            + (" (to set a blank one on purpose: --password '')" if stdin else "")]
        login(m, "paula", "pw1")  # the password stayed
    # `det user login NAME </dev/null` is a blank password (0.13's default users have
    # one; scripts log in that way): refused for paula, whose password is not blank.
    refused = det(m, "user", "login", "paula", check=False)  # stdin ends at once
    assert refused.returncode == 1
    assert "No password on stdin" not in refused.stderr, refused.stderr
    assert "paula" in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
    det(m, "user", "change-password", "--password", "", user="paula")  # on purpose
    login(m, "paula", "")


def test_login_of_a_default_user_from_stdin_that_ends(shared_master) -> None:
    """`det user login determined </dev/null` refused the blank password the default
    users have in 0.13; stdin that ends (or an empty line) is that blank password."""
    m = shared_master
    for name, stdin in (("determined", ""), ("admin", ""), ("determined", "\n")):
        out = det(m, "user", "login", name, input=stdin, check=False)
        assert (out.returncode, out.stdout.strip()) == (0, f"Logged in as user {name!r}"), \
            out.stderr
        assert f"logged in as user {name!r}" in det(m, "user", "whoami").stdout


def test_ctrl_d_or_ctrl_c_at_set_password_changes_nothing(master_factory) -> None:
    """``determined-master --set-password`` on a terminal: Ctrl-D (exit 1) or Ctrl-C
    (130) at the prompt ends the prompt's line, says the change was canceled, and the
    user keeps the blank password; a password typed there is set."""
    m = master_factory(slots=1)
    args = ["--data-dir", m.data_dir, "--set-password", "determined"]

    def blank_login() -> int:
        return httpx.post(m.url + "/api/v1/auth/login", json={
            "username": "determined", "password": ""}).status_code

    for key, want in (("\x04", 1), ("\x03", 130)):
        code, text = run_det_in_terminal(args, module="determined.master", timeout=120.0,
                                         answer=("New password", key))
        assert (code, text) == (want, "New password: \ndetermined-master: password change "
                                      "canceled\n"), text
        assert blank_login() == 200
    code, text = run_det_in_terminal(args, module="determined.master", timeout=120.0,
                                     answer=("New password", "secret\r"))
    assert code == 0 and "the password of 'determined' is set" in text, text
    assert blank_login() == 401


def test_ownership_and_list_filtering(shared_master, tiny_dir) -> None:
    m = shared_master
    det(m, "user", "create", "olive", "--password", "o", user="admin")
    det(m, "user", "login", "olive", "--password", "o")
    config = str(tiny_dir / "const.yaml")
    out = det(m, "e", "create", config, str(tiny_dir), "--paused", "--json", user="olive").stdout
    olive_exp = json.loads(out)["id"]
    with m.client() as anon:  # no token: acts as `determined`
        packed = base64.b64encode(pack_context(str(tiny_dir))).decode()
        with open(config) as f:
            body = {"config": f.read(), "model_def": packed, "activate": False}
        r = anon.post("/experiments", json=body)
        assert r.status_code == 201, r.text
        anon_exp = r.json()["id"]
        assert anon.get(f"/experiments/{olive_exp}").json()["owner"] == "olive"
        assert anon.get(f"/experiments/{anon_exp}").json()["owner"] == "determined"

        ids = [e["id"] for e in anon.get("/experiments", params={"user": "olive"}).json()[
            "experiments"]]
        assert ids == [olive_exp]
        r = anon.get("/experiments", params={"user": "nobody"})
        assert r.status_code == 404 and r.json()["error"] == "user 'nobody' not found"

        # Not the owner: 403 naming the owner; reads stay open to everyone.
        for method, path, body in [
            ("POST", f"/experiments/{olive_exp}/activate", None),
            ("POST", f"/experiments/{olive_exp}/kill", None),
            ("PATCH", f"/experiments/{olive_exp}", {"description": "mine now"}),
        ]:
            r = anon.request(method, path, json=body)
            assert r.status_code == 403, (path, r.text)
            assert "it belongs to 'olive'; only its owner or an admin can" in r.json()["error"]
        assert anon.get(f"/experiments/{olive_exp}").status_code == 200

    # `det e list` shows one's own experiments; -a shows everyone's.
    mine = json.loads(det(m, "e", "list", "--json", user="olive").stdout)
    assert [e["id"] for e in mine] == [olive_exp]
    everyone = {e["id"] for e in json.loads(det(m, "e", "list", "-a", "--json",
                                                user="olive").stdout)}
    assert {olive_exp, anon_exp} <= everyone
    # Without -u: the user last logged in (olive).
    assert json.loads(det(m, "e", "list", "--json").stdout) == mine
    theirs = [e["id"] for e in json.loads(det(m, "e", "list", "--json",
                                              user="determined").stdout)]
    assert anon_exp in theirs and olive_exp not in theirs

    refused = det(m, "e", "kill", str(anon_exp), user="olive", check=False)
    assert refused.returncode == 1
    assert "User 'olive' may not kill experiment" in refused.stderr
    assert "belongs to 'determined'" in refused.stderr
    # The owner and an admin may.
    det(m, "e", "kill", str(olive_exp), user="olive")
    det(m, "e", "kill", str(anon_exp), user="admin")
    with m.client() as c:
        for exp_id in (olive_exp, anon_exp):
            assert wait_for_state(c, exp_id, ["CANCELED"])["state"] == "CANCELED"


def test_no_anonymous_access(master_factory, tiny_dir, tmp_path, monkeypatch) -> None:
    """With ``security.allow_anonymous: false`` only logged-in callers get in; the CLI and
    SDK log in by themselves, trial runners keep their own tokens, sessions expire."""
    config_path = tmp_path / "master.yaml"
    config_path.write_text(yaml.safe_dump(
        {"security": {"allow_anonymous": False, "session_ttl_hours": SESSION_TTL / 3600}}))
    monkeypatch.setenv("DET_MASTER_CONFIG", str(config_path))
    m = master_factory(slots=1)
    password = set_password(m)  # an admin's blank password cannot log in here

    with m.client() as anon:
        r = anon.get("/experiments")
        assert r.status_code == 401
        assert r.json()["error"].startswith("Authentication required: log in")
        assert anon.get("/master").status_code == 200  # public
        r = anon.get("/me", headers={"Authorization": "Basic abc"})
        assert r.status_code == 401 and "Expected the header 'Authorization: Bearer" in \
            r.json()["error"]
        public = anon.get("/master/config", headers=login(m, "determined")).json()
        assert public["security"] == {"allow_anonymous": False,
                                      "session_ttl_hours": SESSION_TTL / 3600,
                                      "agent_token": None}

    # The SDK logs in as `determined`, or as the user named.
    d = Determined(m.url)
    assert d.user == "determined"
    with open(tiny_dir / "const.yaml") as f:
        exp_config = yaml.safe_load(f)
    exp_config["searcher"]["max_length"] = {"batches": 20}
    # The trial trains longer than a session lasts (20 batches of 0.6 s).
    exp_config["entrypoint"] = "slow_def:SlowTrial"
    exp_config["hyperparameters"] = dict(exp_config["hyperparameters"], sleep=0.6)
    exp = d.create_experiment(exp_config, slow_model_dir(tiny_dir, tmp_path))
    # The trial runner reports with its per-trial token: the experiment completes.
    assert exp.wait(interval=0.3, timeout=180) == "COMPLETED"
    det(m, "user", "login", "admin", "--password", password)
    assert Determined(m.url, user="admin")._client.me()["admin"] is True
    with pytest.raises(MasterError, match="Could not log in .* as 'nobody'"):
        Determined(m.url, user="nobody").get_experiment(exp.id)

    # Trials too are killed only by their experiment's owner or an admin.
    admin = login(m, "admin", password)
    with m.client() as c:
        assert c.post("/users", json={"username": "eve"}, headers=admin).status_code == 201
        trial_id = exp.get_trials()[0].id
        r = c.post(f"/trials/{trial_id}/kill", headers=login(m, "eve"))
        assert r.status_code == 403
        assert r.json()["error"] == (f"User 'eve' may not kill trial {trial_id}: it belongs to "
                                     "'determined'; only its owner or an admin can")
        assert c.post(f"/trials/{trial_id}/kill", headers=admin).status_code == 200
        # Admins cannot lock themselves out; an empty change is refused.
        r = c.patch("/users/admin", json={"active": False}, headers=admin)
        assert r.status_code == 400 and "cannot deactivate itself" in r.json()["error"]
        r = c.patch("/users/eve", json={}, headers=admin)
        assert r.status_code == 400 and "Expected at least one of" in r.json()["error"]
        r = c.patch("/users/eve", json={"admin": "maybe"}, headers=admin)
        assert r.status_code == 400 and r.json()["details"][0]["field"] == "admin"

    # An expired session: the API refuses it; det logs in again by itself.
    det(m, "user", "login", "eve", "--password", "")
    token = auth_cache()["masters"][m.url]["tokens"]["eve"]
    time.sleep(SESSION_TTL + 0.5)
    r = httpx.get(m.url + "/api/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 401
    listed = json.loads(det(m, "e", "list", "-a", "--json").stdout)
    assert [e["id"] for e in listed] == [exp.id] and listed[0]["owner"] == "determined"
    assert auth_cache()["masters"][m.url]["tokens"]["eve"] != token


def test_unreadable_login_cache(shared_master) -> None:
    os.makedirs(os.environ["DET_AUTH_DIR"], exist_ok=True)
    path = os.path.join(os.environ["DET_AUTH_DIR"], "auth.json")
    with open(path, "w") as f:
        f.write("{not json")
    broken = det(shared_master, "user", "whoami", check=False)
    assert broken.returncode == 1
    assert f"Cannot read the login cache {path}" in broken.stderr
    assert "Delete it and log in again" in broken.stderr


def test_an_ended_session_says_so_and_how_to_log_in_again(shared_master) -> None:
    """A cached token the master refuses (expired, or a master with a new database) of a
    user with a password: the error said it could not log in "with the blank password";
    it says the saved login is no longer valid and names the command that renews it."""
    m = shared_master
    det(m, "user", "create", "quinn", user="admin")
    det(m, "user", "change-password", "quinn", input="s3cret\n", user="admin")
    det(m, "user", "login", "quinn", "--password", "s3cret")
    cache = auth_cache()
    cache["masters"][m.url]["tokens"]["quinn"] = "a-session-the-master-no-longer-knows"
    with open(os.path.join(os.environ["DET_AUTH_DIR"], "auth.json"), "w") as f:
        json.dump(cache, f)
    ended = det(m, "e", "list", check=False)
    assert ended.returncode == 1
    assert ended.stderr.strip() == (
        f"det: error: The saved login of 'quinn' at {m.url} is no longer valid (the "
        f"session expired or was ended). Log in again with `det -m {m.url} user login "
        "quinn`"), ended.stderr
    assert "Traceback" not in ended.stderr
    det(m, "user", "login", "quinn", "--password", "s3cret")
    assert "logged in as user 'quinn'" in det(m, "user", "whoami").stdout


def test_every_users_experiments_at_80_columns_show_the_owner(shared_master, tiny_dir,
                                                              tmp_path, monkeypatch) -> None:
    """`det e list -a` lists other users' experiments; at 80 columns it left out the owner
    first. Now it keeps it, leaving out trials, labels and end times first."""
    m = shared_master
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config["description"] = "a description long enough to need the whole terminal width"
    config["labels"] = ["baseline", "needs-a-wide-column"]
    path = tmp_path / "long.yaml"
    path.write_text(yaml.safe_dump(config))
    exp_id = det(m, "e", "create", str(path), str(tiny_dir)).stdout.split()[-1]
    det(m, "e", "wait", exp_id)  # COMPLETED: the widest state
    monkeypatch.setenv("COLUMNS", "80")
    listed = det(m, "e", "list", "-a").stdout.splitlines()
    assert [h.strip() for h in listed[0].split("|")][:2] == ["id", "owner"], listed
    assert all(len(line) <= 80 for line in listed), listed
