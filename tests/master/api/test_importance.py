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


def test_each_row_says_how_many_trials_an_estimate_takes():
    # Four trials, four values of lr: one trial per group, no estimate (ω² 0); two values
    # of opt: two groups of two, an estimate.
    trials = [{"hparams": {"lr": lr, "opt": opt}, "best_validation": y}
              for lr, opt, y in [(0.1, "a", 1.0), (0.2, "a", 1.1), (0.3, "b", 3.0), (0.4, "b", 3.2)]]
    rows = {x["name"]: x for x in hparam_importance(trials)["importance"]}
    assert rows["lr"]["needs"] == 5 and rows["lr"]["importance"] == 0.0
    assert rows["opt"]["needs"] == 3 and rows["opt"]["importance"] > 0.5
    # Many distinct numbers are binned: the estimate takes one more trial than the bins.
    many = [{"hparams": {"lr": i / 10}, "best_validation": float(i)} for i in range(12)]
    assert hparam_importance(many)["importance"][0]["needs"] == 6
