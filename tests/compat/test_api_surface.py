"""Every module and name of upstream 0.13.0's public Python surface exists here with the
same parameters (``python-api-0.13.0.md``, a copy of the contract in ../shared/upstream).

Parameters must match by name and order; extra trailing parameters are allowed only with
defaults (every upstream call still works). ``KNOWN_GAPS`` lists what other parts of the
platform still differ in, each with its reason; anything else failing is a regression.
"""

import api_surface
import pytest
import surface_check

KNOWN_GAPS: dict = {}

ENTRIES = api_surface.parse()


def _key(entry):
    return f"{entry.module}.{entry.name}" + (f".{entry.member}" if entry.member else "")


def test_contract_parsed_whole():
    modules = {e.module for e in ENTRIES}
    assert len(ENTRIES) > 500 and {"determined", "determined.pytorch", "determined_common.check",
                                   "determined.horovod", "determined.util"} <= modules


@pytest.mark.parametrize("module", sorted({e.module for e in ENTRIES}))
def test_every_name_exists_with_upstream_parameters(module):
    problems = [p for e in ENTRIES if e.module == module and _key(e) not in KNOWN_GAPS
                for p in surface_check.problems(e)]
    assert not problems, "\n".join(problems)


def test_check_messages_name_values():
    from determined_common import check

    with pytest.raises(check.CheckFailedError, match=r"workers: expected a value > 0, got -1"):
        check.check_gt(-1, 0, "workers")
    with pytest.raises(check.CheckFailedError, match=r"expected an instance of int, got str"):
        check.is_instance("3", int)
    check.check_len([1, 2], 2)
    check.is_subclass(bool, int)


def test_util_metrics_helpers():
    import numpy as np

    from determined import util

    metrics = util.make_metrics(8, [{"loss": np.float32(1.0), "v": [1, 2]},
                                    {"loss": 3.0, "v": [3, 4]}])
    assert metrics["avg_metrics"] == {"loss": 2.0, "v": None} and metrics["num_inputs"] == 8
    assert util.wrap_metrics(metrics, True)["stop_requested"] is True
    with pytest.raises(Exception, match="same metric names"):
        util.validate_batch_metrics([{"a": 1}, {"b": 2}])
    assert util.json_encode({"x": np.arange(2)}) == '{"x": [0, 1]}'


def test_horovod_context_from_config():
    import determined as det
    from determined.horovod import HorovodContext, create_hostlist_arg

    cfg = {"resources": {"slots_per_trial": 2},
           "optimizations": {"aggregation_frequency": 4, "gradient_compression": True}}
    hvd = HorovodContext.from_configs(cfg, det.RendezvousInfo(["a:1"], ["a:2"], 0), {})
    assert hvd.use and hvd.aggregation_frequency == 4 and hvd.fp16_compression
    assert create_hostlist_arg(2, ["10.0.0.1", "10.0.0.2"]) == "10.0.0.1:2,10.0.0.2:2"
    info = det.RendezvousInfo(["10.0.0.1:5000", "10.0.0.2:5000"], ["10.0.0.1:5001"] * 2, 1)
    assert info.get_ip_addresses() == ["10.0.0.1", "10.0.0.2"] and info.is_distributed_trial()
    assert det.ExperimentConfig({"data_layer": {"type": "lfs"}}).get_data_layer_type() == "lfs"
