"""Hyperparameter importance (``master/api/_importance.py``) on synthetic searches."""

import random

from determined.master.api._importance import hparam_importance


def _trials(n, metric_of, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        hp = {"lr": 10 ** rng.uniform(-4, -1), "opt": {"name": rng.choice(["sgd", "adam"])},
              "layers": rng.randint(1, 4), "const": 3}
        out.append({"hparams": hp, "best_validation": metric_of(hp, rng)})
    return out


def test_the_hyperparameter_that_drives_the_metric_ranks_first():
    trials = _trials(60, lambda hp, rng: hp["layers"] * 1.0 + rng.gauss(0, 0.1))
    r = hparam_importance(trials)
    names = [x["name"] for x in r["importance"]]
    assert names[0] == "layers" and set(names) == {"layers", "lr", "opt.name"}  # const varies not
    assert r["importance"][0]["importance"] > 0.9
    assert all(x["importance"] < 0.1 for x in r["importance"][1:])
    assert abs(sum(x["share"] for x in r["importance"]) - 1) < 1e-3
    assert r["trials"] == 60


def test_a_categorical_and_a_log_scaled_numeric_hyperparameter():
    import math

    trials = _trials(80, lambda hp, rng: (1.0 if hp["opt"]["name"] == "adam" else 0.0)
                     + 0.5 * math.log10(hp["lr"]) + rng.gauss(0, 0.05))
    top = {x["name"]: x["importance"] for x in hparam_importance(trials)["importance"]}
    assert top["opt.name"] > 0.2 and top["lr"] > 0.2 and top["layers"] < 0.1


def test_noise_alone_explains_about_nothing_and_missing_metrics_are_left_out():
    trials = _trials(60, lambda hp, rng: rng.gauss(0, 1), seed=3)
    trials += [{"hparams": {"lr": 1.0, "layers": 9}, "best_validation": None},
               {"hparams": {"lr": 1.0, "layers": 9}, "best_validation": float("nan")}]
    r = hparam_importance(trials)
    assert r["trials"] == 60
    assert all(x["importance"] < 0.15 for x in r["importance"])


def test_too_few_trials_give_no_ranking():
    assert hparam_importance([{"hparams": {"a": 1}, "best_validation": 1.0},
                              {"hparams": {"a": 2}, "best_validation": 2.0}]) == {
        "importance": [], "trials": 2}
