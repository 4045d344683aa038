"""searcher.sampler: the default keeps every searcher's trials as before; ``tpe`` learns
from results, is deterministic, restores exactly from JSON snapshots and handles every
hyperparameter type."""

from __future__ import annotations

import json
import math
import random
import statistics
from typing import Any, Dict

import pytest

from determined.config import validate_config
from determined.searcher import Create, Searcher, TPESampler, make_searcher, simulate
from determined.searcher._hparams import iter_leaves

from ._helpers import SPACE, curve, make_config

METHODS = {
    "random": dict(max_trials=30, max_concurrent_trials=2),
    "adaptive_asha": dict(max_trials=40, divisor=2.0, max_rungs=3, max_concurrent_trials=2),
    "adaptive": dict(budget={"batches": 600}, divisor=2.0, max_rungs=3),
    "adaptive_simple": dict(max_trials=30, divisor=2.0, max_rungs=3),
}

# A space with every kind of leaf, nested maps and a log scale; the optimum sits in a
# corner random search seldom hits.
WIDE_SPACE: Dict[str, Any] = {
    "global_batch_size": 32,
    "lr": {"type": "log", "base": 10.0, "minval": -6.0, "maxval": 0.0},
    "width": {"type": "int", "minval": 1, "maxval": 100},
    "act": {"type": "categorical", "vals": ["relu", "tanh", "gelu", {"leaky": 0.1}]},
    "opt": {
        "momentum": {"type": "double", "minval": 0.0, "maxval": 1.0},
        "name": {"type": "const", "val": "sgd"},
        "fixed": {"type": "int", "minval": 3, "maxval": 3},
    },
}


def wide_objective(hp: Dict[str, Any], units: int, seed: int) -> float:
    loss = (math.log10(hp["lr"]) + 4.5) ** 2 + ((hp["width"] - 80) / 20) ** 2
    loss += (hp["opt"]["momentum"] - 0.9) ** 2 * 4 + (0.0 if hp["act"] == {"leaky": 0.1} else 1.0)
    return loss + 5.0 / units + random.Random(seed * 7 + units).random() * 0.05


def creates(result) -> Dict[int, Dict[str, Any]]:
    return {op.request_id: op.hparams for op in result.op_log if isinstance(op, Create)}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_explicit_random_sampler_is_the_default(name: str) -> None:
    base = simulate(make_config(name, **METHODS[name]), curve, concurrency=2)
    explicit = simulate(make_config(name, sampler="random", **METHODS[name]), curve,
                        concurrency=2)
    assert base.to_dict() == explicit.to_dict()


def test_config_schema_takes_sampler() -> None:
    def config(**searcher: Any) -> Dict[str, Any]:
        fields = {"name": "adaptive_asha", "metric": "loss", "max_trials": 4,
                  "max_length": {"batches": 8}}
        fields.update(searcher)
        return {"entrypoint": "m:T", "hyperparameters": {"global_batch_size": 8},
                "searcher": fields}

    assert validate_config(config())["searcher"]["sampler"] == "random"
    assert validate_config(config(sampler="tpe"))["searcher"]["sampler"] == "tpe"
    with pytest.raises(Exception, match="sampler"):
        validate_config(config(sampler="cmaes"))


@pytest.mark.parametrize("name", ["grid", "single", "pbt"])
def test_tpe_is_refused_where_no_trial_is_sampled_from_results(name: str) -> None:
    with pytest.raises(ValueError, match="searcher.sampler"):
        make_searcher(make_config(name, sampler="tpe"))
    with pytest.raises(ValueError, match="searcher.sampler"):
        make_searcher(make_config("random", max_trials=2, sampler="bogus"))


def test_tpe_starts_exactly_as_random_search() -> None:
    """Before any model exists, a TPE search creates the same trials as a random one."""
    kw = dict(max_trials=30, max_concurrent_trials=1)
    rand = creates(simulate(make_config("random", space=WIDE_SPACE, **kw), wide_objective))
    tpe = creates(simulate(make_config("random", space=WIDE_SPACE, sampler="tpe", **kw),
                           wide_objective))
    free = 4  # lr, width, act, momentum
    first_model = max(10, 2 * (free + 1))  # configurations with results before a model
    for rid in range(1, first_model + 1):  # trial 11 is the first created after 10 results
        assert tpe[rid] == rand[rid], rid
    assert any(tpe[r] != rand[r] for r in tpe), "TPE never changed a suggestion"


@pytest.mark.parametrize("name", sorted(METHODS))
def test_tpe_is_deterministic_and_restores_exactly(name: str) -> None:
    config = make_config(name, space=WIDE_SPACE, sampler="tpe", **METHODS[name])
    once = simulate(config, wide_objective, concurrency=3, shuffle_seed=5)
    again = simulate(config, wide_objective, concurrency=3, shuffle_seed=5)
    assert once.to_dict() == again.to_dict()
    restored = simulate(config, wide_objective, concurrency=3, shuffle_seed=5,
                        restore_at=range(1, once.events + 1, 3))
    assert restored.to_dict() == once.to_dict()


def test_suggestions_cover_every_leaf_type_within_bounds() -> None:
    config = make_config("adaptive_asha", space=WIDE_SPACE, sampler="tpe",
                         **METHODS["adaptive_asha"])
    result = simulate(config, wide_objective, concurrency=2)
    leaves = dict(iter_leaves(WIDE_SPACE))
    for hp in creates(result).values():
        assert hp["global_batch_size"] == 32 and hp["opt"]["name"] == "sgd"
        assert hp["opt"]["fixed"] == 3
        assert 1e-6 <= hp["lr"] <= 1.0 and isinstance(hp["width"], int)
        assert 1 <= hp["width"] <= 100 and 0.0 <= hp["opt"]["momentum"] <= 1.0
        assert hp["act"] in leaves[("act",)]["vals"]
        assert sorted(hp) == sorted(WIDE_SPACE)


def test_tpe_finds_better_configurations_than_random() -> None:
    def best(sampler: str, seed: int) -> float:
        config = make_config("adaptive_asha", seed=seed, space=WIDE_SPACE, sampler=sampler,
                             max_trials=80, divisor=3.0, max_rungs=3, max_concurrent_trials=2)
        result = simulate(config, wide_objective, concurrency=2)
        return min(v for t in result.trials.values() for _, v in t.validations)

    rand = statistics.median(best("random", s) for s in range(7))
    tpe = statistics.median(best("tpe", s) for s in range(7))
    assert tpe < 0.7 * rand, (tpe, rand)


def test_snapshot_holds_the_model_data_and_refuses_another_sampler() -> None:
    config = make_config("random", space=WIDE_SPACE, sampler="tpe", max_trials=4,
                         max_concurrent_trials=1)
    s = make_searcher(config)
    ops = s.start()
    rid = ops[0].request_id
    s.on_trial_created(rid)
    s.on_validation_completed(rid, {"validation_error": 0.25})
    snap = json.loads(json.dumps(s.snapshot()))
    assert snap["sampler"]["name"] == "tpe"
    [[units, rows]] = snap["sampler"]["state"]["results"]
    assert units == 64 and rows[0][1] == 0.25 and len(rows[0][0]) == 4
    assert Searcher.restore(config, snap).snapshot() == snap
    with pytest.raises(ValueError, match="sampler"):
        Searcher.restore(make_config("random", space=WIDE_SPACE, max_trials=4,
                                     max_concurrent_trials=1), snap)


def test_exited_trials_count_as_worst_results() -> None:
    space = {"x": {"type": "double", "minval": 0.0, "maxval": 1.0}}
    sampler = TPESampler(space)
    sampler.observe({"x": 0.5}, 10, math.inf)
    sampler.observe({"x": 0.2}, 10, -math.inf)
    sampler.observe({"x": 0.7}, 10, float("nan"))
    state = json.loads(json.dumps(sampler.state_dict()))
    other = TPESampler(space)
    other.load_state_dict(state)
    assert [m for _, m in other.results[10]] == [math.inf, -1.7976931348623157e308, math.inf]


def test_ranking_puts_longer_training_first_and_the_model_follows_it() -> None:
    space = {"x": {"type": "double", "minval": 0.0, "maxval": 1.0},
             "y": {"type": "categorical", "vals": [1, 2]}}
    s = TPESampler(space, warmup=10)
    # Ten configurations at 4 units; the best metrics there are near x=1 with y=1.
    for i in range(10):
        s.observe({"x": i / 10, "y": 1 + i % 2}, 4, 1.0 - i / 10)
    rng = random.Random(0)
    # Three of them (x near 0, y=2) were promoted to 16 units: they now rank first,
    # whatever their metric at 4 units was.
    for i, x in enumerate((0.1, 0.3, 0.5)):
        s.observe({"x": x, "y": 2}, 16, 5.0 + i)
    ranked = s.ranking()
    assert ranked[:3] == [(0.1, 1.0), (0.3, 1.0), (0.5, 1.0)]
    assert len(ranked) == 10  # each configuration once, at its longest length
    assert s.n_good(len(ranked)) == 1 and s.n_good(1000) == 25
    picks = [s.suggest(space, rng) for _ in range(20)]
    assert sum(p["y"] == 2 for p in picks) >= 15
    assert statistics.median(p["x"] for p in picks) < 0.4


def test_no_model_before_the_warmup() -> None:
    space = {"x": {"type": "double", "minval": 0.0, "maxval": 1.0}}
    s = TPESampler(space)
    assert s.warmup == 10
    for i in range(9):
        s.observe({"x": 0.3}, 4, float(i))
    assert s.suggest(space, random.Random(1)) == TPESampler(space).suggest(space,
                                                                          random.Random(1))
    with pytest.raises(ValueError, match="warmup"):
        TPESampler(space, warmup=1)
