"""Templates have owners: anyone reads them, only the owner or an admin overwrites or
deletes one (403 otherwise); ``det template list`` shows the owner."""

import json

from det_cli_testing import run_det


def _login(c, user, password=""):
    r = c.post("/auth/login", json={"username": user, "password": password})
    assert r.status_code == 200, r.text
    return {"Authorization": "Bearer " + r.json()["token"]}


def test_only_owner_or_admin_changes_a_template(shared_master):
    with shared_master.client() as c:
        admin = _login(c, "admin")
        assert c.post("/users", json={"username": "mallory", "password": "pw"},
                      headers=admin).status_code == 201
        mallory = _login(c, "mallory", "pw")
        owner = _login(c, "determined")
        r = c.put("/templates/base", json={"config": {"max_restarts": 1}}, headers=owner)
        assert r.status_code == 200 and r.json()["owner"] == "determined", r.text

        hijack = {"config": {"checkpoint_storage": {"type": "shared_fs",
                                                     "host_path": "/tmp/stolen"}}}
        r = c.put("/templates/base", json=hijack, headers=mallory)
        assert r.status_code == 403 and "belongs to 'determined'" in r.text, r.text
        r = c.delete("/templates/base", headers=mallory)
        assert r.status_code == 403, r.text
        got = c.get("/templates/base", headers=mallory).json()  # reads stay open
        assert got == {"name": "base", "config": {"max_restarts": 1}, "owner": "determined"}

        # mallory's own template is hers; an admin may change anyone's.
        assert c.put("/templates/mine", json={"config": {}}, headers=mallory).json()[
            "owner"] == "mallory"
        r = c.put("/templates/base", json={"config": {"max_restarts": 2}}, headers=admin)
        assert r.status_code == 200 and r.json()["owner"] == "determined", r.text

        listed = run_det(["-m", shared_master.url, "template", "list"])
        assert listed.returncode == 0, listed.stderr
        rows = [line.split() for line in listed.stdout.splitlines()]
        assert ["base", "|", "determined"] in rows and ["mine", "|", "mallory"] in rows, \
            listed.stdout
        as_json = json.loads(run_det(["-m", shared_master.url, "template", "list",
                                      "--json"]).stdout)
        assert {t["name"]: t["owner"] for t in as_json} == {"base": "determined",
                                                             "mine": "mallory"}
        assert c.delete("/templates/base", headers=owner).status_code == 200
        assert c.get("/templates/base").status_code == 404
