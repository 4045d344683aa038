"""Upstream 0.13 flags that used to be missing, against a real master and the real ``det``:
``det e create -g/--git``, ``det user link-with-agent-user``, task ``-v/--volume``, and the
shell's ``-p/--passphrase`` and ssh options (accepted, no effect)."""

import json
import shutil
import subprocess

import httpx
import pytest
import yaml

from det_cli_testing import run_det

pytestmark = pytest.mark.e2e


def det(master, *args, code=0, env=None):
    out = run_det(["-m", master.url, *args], timeout=180, env=env)
    assert out.returncode == code, f"{args}: {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_git_flag_records_the_model_definitions_commit(shared_master, tiny_dir, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(tiny_dir, repo)
    config = repo / "const.yaml"
    _git(repo, "init", "-q")
    _git(repo, "config", "user.name", "Ada")
    _git(repo, "config", "user.email", "ada@example.com")
    _git(repo, "remote", "add", "origin", "https://example.com/ada/tiny.git")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "tiny")
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()

    out = det(shared_master, "e", "create", config, repo, "-g", "--paused")
    exp_id = int(out.stdout.split("Created experiment")[1].split()[0])
    (exp,) = json.loads(det(shared_master, "e", "describe", exp_id, "--json").stdout)
    assert exp["git_remote"] == "https://example.com/ada/tiny.git"
    assert exp["git_commit"] == commit and exp["git_committer"] == "Ada <ada@example.com>"
    assert exp["git_commit_date"].startswith("20")
    assert f"git: https://example.com/ada/tiny.git {commit}" in det(
        shared_master, "e", "describe", exp_id).stdout
    plain = det(shared_master, "e", "create", config, repo, "--paused")
    plain_id = int(plain.stdout.split("Created experiment")[1].split()[0])
    (other,) = json.loads(det(shared_master, "e", "describe", plain_id, "--json").stdout)
    assert other["git_commit"] is None

    (repo / "model_def.py").write_text((repo / "model_def.py").read_text() + "\n# edited\n")
    dirty = det(shared_master, "e", "create", config, repo, "--git", code=1)
    assert "uncommitted changes" in dirty.stderr and "model_def.py" in dirty.stderr
    plain_dir = det(shared_master, "e", "create", tiny_dir / "const.yaml", tmp_path / "repo2",
                    "-g", code=1)
    assert "Traceback" not in plain_dir.stderr
    (tmp_path / "norepo").mkdir()
    norepo = det(shared_master, "e", "create", tiny_dir / "const.yaml", tmp_path / "norepo",
                 "-g", code=1)
    assert "not in a git repository" in norepo.stderr
    local = det(shared_master, "e", "create", config, repo, "-g", "--local", code=1)
    assert "--git needs a master" in local.stderr

    bad = httpx.post(shared_master.url + "/api/v1/experiments", json={
        "config": yaml.safe_load(config.read_text()), "model_def": "", "activate": False,
        "git": {"git_commit": "abc"}})
    assert bad.status_code in (400, 422) and "git_remote" in bad.text


def test_link_with_agent_user_is_admin_only_and_shown(shared_master, tmp_path):
    env = {"DET_AUTH_DIR": str(tmp_path / "auth")}
    det(shared_master, "-u", "admin", "user", "create", "alice", env=env)
    link = ["user", "link-with-agent-user", "alice", "--agent-uid", "1000",
            "--agent-gid", "50", "--agent-user", "alice", "--agent-group", "staff"]
    refused = det(shared_master, *link, code=1, env=env)
    assert "admin" in refused.stderr.lower() and "Traceback" not in refused.stderr
    out = det(shared_master, "-u", "admin", *link, env=env)
    assert "alice:staff (1000:50)" in out.stdout
    assert "alice:staff (1000:50)" in det(shared_master, "user", "list", env=env).stdout
    users = json.loads(det(shared_master, "user", "list", "--json", env=env).stdout)
    alice = next(u for u in users if u["username"] == "alice")
    assert alice["agent_user_group"] == {"agent_uid": 1000, "agent_gid": 50,
                                         "agent_user": "alice", "agent_group": "staff"}
    assert next(u for u in users if u["username"] == "determined")["agent_user_group"] is None
    csv = det(shared_master, "user", "list", "--csv", env=env).stdout
    assert "agent_uid" in csv.splitlines()[0] and "alice,False,True,1000,50,alice,staff" in csv

    negative = det(shared_master, "-u", "admin", "user", "link-with-agent-user", "alice",
                   "--agent-uid", "-1", "--agent-gid", "0", "--agent-user", "a",
                   "--agent-group", "b", code=2, env=env)
    assert "argument --agent-uid: Expected a whole number of at least 0" in negative.stderr
    missing = det(shared_master, "-u", "admin", "user", "link-with-agent-user", "nobody",
                  "--agent-uid", "1", "--agent-gid", "1", "--agent-user", "a",
                  "--agent-group", "b", code=1, env=env)
    assert "nobody" in missing.stderr
    token = httpx.post(shared_master.url + "/api/v1/auth/login",
                       json={"username": "admin", "password": ""}).json()["token"]
    r = httpx.patch(shared_master.url + "/api/v1/users/alice",
                    headers={"Authorization": f"Bearer {token}"},
                    json={"agent_user_group": {"agent_uid": 1, "agent_gid": 1,
                                               "agent_user": "", "agent_group": "g"}})
    assert r.status_code in (400, 422) and "agent_user" in r.text


def test_volume_links_a_host_path_into_the_task_directory(shared_master, tmp_path):
    host = tmp_path / "host-data"
    host.mkdir()
    (host / "hello.txt").write_text("hello from the host\n")
    out = det(shared_master, "cmd", "run", "-v", f"{host}:data", "--volume",
              f"{host}:/abs/inside", "cat data/hello.txt abs/inside/hello.txt; ls -l data")
    assert out.stdout.count("hello from the host") == 2, out.stdout
    assert f"data -> {host}" in out.stdout

    for value, message in (("no-colon", "expected HOST:CONTAINER"),
                           (f"{host}:", "expected HOST:CONTAINER"),
                           ("a:b:c", "expected HOST:CONTAINER"),
                           ("relative:data", "HOST must be an absolute path")):
        bad = det(shared_master, "cmd", "run", "-v", value, "true", code=2)
        assert message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    bad = det(shared_master, "notebook", "start", "-v", "x", "-d", code=2)
    assert "expected HOST:CONTAINER" in bad.stderr
    escape = det(shared_master, "cmd", "run", "-v", f"{host}:../out", "true", code=1)
    assert "bind_mounts[0].container_path" in escape.stderr

    gone = det(shared_master, "cmd", "run", "-v", f"{tmp_path}/missing:data", "true", code=1)
    assert "does not exist" in gone.stdout + gone.stderr


def test_shell_accepts_passphrase_and_ssh_options(shared_master):
    help_text = det(shared_master, "shell", "start", "--help").stdout
    assert "websocket" in help_text and "--passphrase" in help_text
    out = det(shared_master, "shell", "start", "-d", "-p", "--", "-A", "-o", "X=1")
    assert "ssh options -A -o X=1 are ignored" in out.stderr
    task_id = out.stdout.strip()
    assert task_id
    det(shared_master, "shell", "kill", task_id)
