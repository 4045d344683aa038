"""Empty or blank experiment labels are refused with a 400 naming the field: through
the REST API, `det e label add` and a config's ``labels``."""

import base64

import yaml

from det_cli_testing import run_det
from determined.common.api import pack_context


def test_empty_labels_are_400(shared_master, tiny_dir):
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    body = {"config": config, "activate": False,
            "model_def": base64.b64encode(pack_context(str(tiny_dir))).decode()}
    with shared_master.client() as api:
        r = api.post("/experiments", json=body)
        assert r.status_code == 201, r.text
        exp_id = r.json()["id"]
        for labels in ([""], ["ok", "  "]):
            r = api.patch(f"/experiments/{exp_id}", json={"labels": labels})
            assert r.status_code == 400, r.text
            assert r.json()["details"][0]["field"] == "labels"
            assert "non-empty labels" in r.text
        out = run_det(["-m", shared_master.url, "e", "label", "add", exp_id, ""])
        assert out.returncode != 0 and "non-empty labels" in out.stderr, out
        assert run_det(["-m", shared_master.url, "e", "label", "add", exp_id,
                        "kept"]).returncode == 0
        assert api.get(f"/experiments/{exp_id}").json()["labels"] == ["kept"]
        r = api.post("/experiments", json=dict(body, config=dict(config, labels=["a", ""])))
        assert r.status_code == 400 and "labels" in r.text, r.text
