"""Config parsing as upstream 0.13 parsed it: YAML 1.2, bounded aliases, what 0.13 accepted."""

import time
import tracemalloc

import pytest

from determined.config import (
    MAX_ALIAS_EXPANSION,
    config_warnings,
    local_test_config,
    parse_yaml,
    validate_config,
)
from determined.config import test_mode_config as make_test_mode_config
from determined.errors import InvalidConfigError

BASE = """
entrypoint: model_def:Trial
hyperparameters:
  global_batch_size: 32
  lr: 1e-4
  eps: 1e-6
  flag: yes
  grid: {type: categorical, vals: [1e-3, 1e-2]}
searcher: {name: single, metric: loss, max_length: {batches: 10}}
"""

LAUGHS = "\n".join(
    [f'{chr(97)}: &{chr(97)} ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9) + "]"
       for i in range(1, 9)]
)


def test_yaml_12_numbers_and_hparam_types():
    raw = parse_yaml(BASE)
    hp = raw["hyperparameters"]
    assert hp["lr"] == 1e-4 and isinstance(hp["lr"], float)
    assert isinstance(hp["eps"], float)
    assert hp["flag"] == "yes"  # YAML 1.2: not a bool
    cfg = validate_config(raw)
    assert cfg["hyperparameters"]["lr"] == {"type": "const", "val": 1e-4}
    assert cfg["hyperparameters"]["grid"]["vals"] == [1e-3, 1e-2]


def test_billion_laughs_rejected_quickly_with_bounded_memory():
    assert len(LAUGHS) < 500
    tracemalloc.start()
    start = time.monotonic()
    with pytest.raises(InvalidConfigError) as e:
        parse_yaml(LAUGHS)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.monotonic() - start < 5
    assert peak < 20 * 2**20
    assert "aliases expand" in str(e.value) and f"{MAX_ALIAS_EXPANSION:,}" in str(e.value)


def test_small_alias_use_still_works_and_is_unshared(monkeypatch):
    raw = parse_yaml("a: &x {k: [1, 2]}\nb: *x\n")
    assert raw["a"] == raw["b"] and raw["a"] is not raw["b"]
    from determined.config import _load

    monkeypatch.setattr(_load, "MAX_ALIAS_EXPANSION", 100)
    big = parse_yaml("x: [" + ",".join(["1"] * 1000) + "]")  # written out: no limit
    assert len(big["x"]) == 1000
    with pytest.raises(InvalidConfigError, match="at most 100 values"):
        parse_yaml("a: &a [" + ",".join(["1"] * 60) + "]\nb: [*a, *a]")


@pytest.mark.parametrize("text,message", [
    ("a: &x [1, *x]", "recursive alias"),
    ("a: 1\na: 2", "duplicate key"),
    ("a: [1,", "not valid YAML"),
])
def test_bad_yaml_is_a_clear_error(text, message):
    with pytest.raises(InvalidConfigError, match=message):
        parse_yaml(text)


def test_accepts_what_0_13_accepted():
    raw = parse_yaml(BASE)
    raw["data_layer"] = {"type": "lfs"}
    raw["resources"] = {"slots_per_trial": 4}
    raw["hyperparameters"]["global_batch_size"] = 2  # checked when the trial starts
    cfg = validate_config(raw)
    assert cfg["data_layer"]["type"] == "lfs"
    for name in ("adaptive_asha", "adaptive_simple"):
        validate_config({**raw, "searcher": {
            "name": name, "metric": "loss", "max_trials": 4, "max_length": {"batches": 8},
            "bracket_rungs": [3, 2]}})
    validate_config({**raw, "searcher": {
        "name": "adaptive", "metric": "loss", "budget": {"batches": 64},
        "max_length": {"batches": 8}, "bracket_rungs": [3]}})


def test_fields_without_effect_each_warned_once_by_name():
    raw = parse_yaml(BASE)
    raw.update({
        "environment": {"image": "determinedai/environments:py-3.6", "environment_variables": ["A=1"]},
        "resources": {"shm_size": 4096, "native_parallel": True},
        "optimizations": {"tensor_fusion_threshold": 32, "tensor_fusion_cycle_time": 4},
        "bind_mounts": [{"host_path": "/tmp", "container_path": "data", "propagation": "shared"}],
    })
    warnings = config_warnings(raw)
    named = [w.split(" ")[0] for w in warnings]
    assert named == [
        "environment.image", "resources.shm_size", "resources.native_parallel",
        "optimizations.tensor_fusion_threshold", "optimizations.tensor_fusion_cycle_time",
        "bind_mounts[*].propagation",
    ]
    assert all("no effect" in w for w in warnings)
    assert config_warnings(parse_yaml(BASE)) == []  # environment_variables works: no warning


def test_0_13_defaults_spelled_out_are_not_warned():
    """Example configs often write 0.13's defaults out; those ask for nothing that
    does not happen here."""
    raw = parse_yaml(BASE)
    raw.update(parse_yaml("""
environment: {force_pull_image: false, ports: {}, registry_auth: null}
resources: {slots_per_trial: 1, native_parallel: false, agent_label: ""}
optimizations: {tensor_fusion_threshold: 64, tensor_fusion_cycle_time: 5,
                auto_tune_tensor_fusion: false, gradient_compression: false}
bind_mounts: [{host_path: /tmp, container_path: data, read_only: false,
               propagation: rprivate}]
checkpoint_storage: {type: shared_fs, host_path: /tmp, propagation: rprivate}
"""))
    assert config_warnings(raw) == []
    raw["bind_mounts"][0]["read_only"] = True
    raw["optimizations"]["tensor_fusion_threshold"] = 32
    assert [w.split(" ")[0] for w in config_warnings(raw)] == [
        "optimizations.tensor_fusion_threshold", "bind_mounts[*].read_only"]


def test_partial_config_in_local_test_mode_merged_over_defaults():
    raw = parse_yaml("entrypoint: model_def:Trial\nhyperparameters: {global_batch_size: 4}\n"
                     "searcher: {max_length: {batches: 100}}\n")
    with pytest.raises(InvalidConfigError):
        validate_config(raw)  # a real experiment needs the searcher's name and metric
    cfg = validate_config(make_test_mode_config(local_test_config(raw)))
    assert cfg["searcher"]["name"] == "single"
    assert cfg["searcher"]["max_length"] == {"batches": 1}


def test_upstreams_experiment_config_reads_as_the_typed_view() -> None:
    """``determined.ExperimentConfig`` (0.13's dict) and ``config.ExperimentConfig`` (the
    typed view) answer alike, for a validated config and for a partial one."""
    import determined as det
    from determined.config import ExperimentConfig

    cfg = validate_config(parse_yaml(BASE) | {"scheduling_unit": 7,
                                              "resources": {"slots_per_trial": 2},
                                              "reproducibility": {"experiment_seed": 5}})
    for raw, expected in ((cfg, (7, 2, 5)), ({"batches_per_step": 3}, (3, 1, 0))):
        upstream, typed = det.ExperimentConfig(raw), ExperimentConfig(raw)
        assert isinstance(upstream, dict) and upstream == raw
        assert (upstream.scheduling_unit(), upstream.slots_per_trial(),
                upstream.experiment_seed()) == expected
        assert (typed.scheduling_unit, typed.slots_per_trial, typed.experiment_seed) == expected
