"""``det e create --local --test`` tells what the real run would: the config as written
is validated (not only the one-batch copy that replaces its searcher), and a searcher
metric the config names but the validation lacks fails the test, as on a master."""

import pathlib

import pytest
import yaml

from det_cli_testing import run_det

pytestmark = pytest.mark.timeout(600)

TINY = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tiny_pytorch"


def create_test(tmp_path, change):
    cfg = yaml.safe_load((TINY / "const.yaml").read_text())
    change(cfg)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = run_det(["e", "create", path, TINY, "--local", "--test",
                   "--local-dir", tmp_path / "local"])
    return out, " ".join((out.stdout + out.stderr).split())


@pytest.mark.parametrize("change,field,words", [
    (lambda c: c["searcher"].update(name="singel"), "searcher.name", "Received: 'singel'"),
    (lambda c: c["searcher"].update(max_length={"batches": "forty"}), "searcher.max_length",
     "Received: 'forty'"),
    (lambda c: c.update(min_validation_period={"batchs": 20}), "min_validation_period",
     "'batchs'"),
])
def test_the_config_as_written_is_validated(tmp_path, change, field, words):
    out, text = create_test(tmp_path, change)
    assert out.returncode == 1, text
    assert f"Invalid experiment config {tmp_path / 'config.yaml'}" in text
    assert f"- {field}: " in text and words in text
    assert "Model definition test succeeded" not in text


def test_a_named_searcher_metric_the_trial_lacks_fails_the_test(tmp_path):
    out, text = create_test(tmp_path, lambda c: c["searcher"].update(metric="val_loss"))
    assert out.returncode == 1, text
    assert ("Model definition test failed: the validation metrics of TinyTrial lack the "
            "searcher metric 'val_loss' (received: ") in text
    assert "or change searcher.metric" in text
    assert "Model definition test succeeded" not in text


def test_a_partial_config_without_a_metric_still_passes(tmp_path):
    def partial(cfg):
        cfg["searcher"] = {"max_length": {"batches": 5}}
        del cfg["min_validation_period"]
    out, text = create_test(tmp_path, partial)
    assert out.returncode == 0, text
    assert "Model definition test succeeded" in text
