"""`det e create ... --local --test` runs a script entrypoint in a temporary copy of the
model directory, as every other trial run does: it ran in the user's own directory (the
Hugging Face example left `hf-output/` in the checkout). A Trial class still runs in
place, so that its tracebacks name the user's files (test_local_experiments.py)."""

import pathlib

import pytest
import yaml

from det_cli_testing import run_det

pytestmark = pytest.mark.timeout(600)


def _tree(root: pathlib.Path):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_script_writes_into_a_copy_not_the_model_directory(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "train.py").write_text(
        "import os\nos.makedirs('outputs', exist_ok=True)\n"
        "open('outputs/written.txt', 'w').write('x')\nprint('cwd', os.getcwd())\n")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "entrypoint": "python3 train.py", "hyperparameters": {},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 5}}}))
    before = _tree(model)
    out = run_det(["e", "create", config, model, "--local", "--test",
                   "--local-dir", tmp_path / "local"])
    assert out.returncode == 0, out.stdout + out.stderr
    assert "cwd " in out.stdout and f"cwd {model}\n" not in out.stdout, out.stdout
    assert _tree(model) == before

