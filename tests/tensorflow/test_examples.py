"""The TensorFlow examples: configs validate, and a shortened run of each model improves."""

import importlib.util
import os
import subprocess
import sys

import pytest
import yaml
from tf_trial_utils import SRC, plan, run_trial, val_metric

from determined.config import load_config, validate_config

EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
TRIAL_EXAMPLES = ["tf_keras_digits", "estimator_digits", "tf_graph_digits"]


def _load_class(example, entrypoint):
    module_name, _, cls = entrypoint.partition(":")
    path = os.path.join(EXAMPLES, example, module_name + ".py")
    spec = importlib.util.spec_from_file_location(f"example_{example}_{module_name}", path)
    module = importlib.util.module_from_spec(spec)
    dont_write = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = dont_write
    return getattr(module, cls)


@pytest.mark.parametrize("example", TRIAL_EXAMPLES + ["native_keras"])
@pytest.mark.parametrize("name", ["const.yaml", "adaptive.yaml"])
def test_configs_validate(example, name):
    raw = load_config(os.path.join(EXAMPLES, example, name))
    if example == "native_keras":
        raw["internal"] = {"native": {"command": ["native_digits.py"]}}
    config = validate_config(raw)
    assert "global_batch_size" in config["hyperparameters"]
    assert config["records_per_epoch"] > 0
    if name == "adaptive.yaml":
        assert config["searcher"]["name"] == "adaptive_asha"


@pytest.mark.parametrize("example", TRIAL_EXAMPLES)
def test_example_trains(example, tmp_path):
    raw = load_config(os.path.join(EXAMPLES, example, "const.yaml"))
    raw.pop("min_validation_period", None)
    config = validate_config(raw)
    trial_class = _load_class(example, config["entrypoint"])
    metric = config["searcher"]["metric"]
    smaller = config["searcher"]["smaller_is_better"]
    host, _ = run_trial(os.path.join(EXAMPLES, example), config, plan("v", 60, "v"),
                        str(tmp_path), trial_class=trial_class, smaller_is_better=smaller)
    first, last = val_metric(host, metric)
    assert (last < first) if smaller else (last > first), (first, last)


def test_native_example_runs(tmp_path):
    script = os.path.join(EXAMPLES, "native_keras", "native_digits.py")
    with open(os.path.join(EXAMPLES, "native_keras", "const.yaml")) as f:
        config = yaml.safe_load(f)
    config["searcher"]["max_length"] = {"batches": 60}
    config["checkpoint_storage"] = {"type": "shared_fs", "host_path": str(tmp_path / "ckpt")}
    path = tmp_path / "short.yaml"
    path.write_text(yaml.safe_dump(config))
    env = dict(os.environ, PYTHONPATH=SRC, TF_CPP_MIN_LOG_LEVEL="2", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, script, str(path)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The batches the searcher asked for (it printed the History's 'epochs', which are not)
    assert "trained 60 batches; final validation: {'val_loss'" in proc.stdout, proc.stdout
    # one checkpoint (TensorBoard event files sync to the storage's tensorboard/ directory)
    assert len([n for n in os.listdir(tmp_path / "ckpt") if n != "tensorboard"]) == 1
