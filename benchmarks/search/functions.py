"""Multi-fidelity test functions through the searcher simulator: simple regret vs budget.

Usage (from the repository root, with the project's venv and the ``bench`` extra)::

    python benchmarks/search/functions.py              # 50 seeds per function
    python benchmarks/search/functions.py --seeds 5    # smoke run

Functions (fidelity ``z = trained units / max_length`` in (0, 1]; the optimum is at
``z = 1``): the multi-fidelity Branin (2-d) and Hartmann-6 of Kandasamy et al., "Multi-
fidelity Bayesian optimisation with continuous approximations" (ICML 2017), the
variants multi-fidelity optimizers (BOHB, BOCA, FABOLAS follow-ups) are usually
compared on: lower fidelities shift the function's coefficients, so cheap evaluations
rank configurations roughly but not exactly as full ones do.

Methods, one worker each, the same ``max_length`` (243 units, rungs 27, 81, 243 with
``divisor=3``, ``max_rungs=3``):

- ``adaptive_asha`` (random sampler) and ``adaptive_asha, tpe``: our searcher through
  ``determined.searcher.simulate`` with capacity 1, ``max_trials`` 200;
- ``random``: our random search (every trial at full fidelity);
- ``optuna``: ``TPESampler(seed)`` + ``HyperbandPruner(27, 243, 3)``, reporting at the
  rungs, 200 trials.

Compute is units trained, summed in execution order. Simple regret at budget ``B``:
the incumbent is the configuration with the best value observed at the highest
fidelity evaluated within ``B`` (as HpBandSter reports it); regret = its full-fidelity
value minus the optimum. Tables give the median over seeds at budgets of 10, 20 and 40
full-length evaluations.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "src"))

from determined.config import validate_config  # noqa: E402
from determined.searcher import simulate  # noqa: E402

MAX_LENGTH, DIVISOR, MAX_RUNGS = 243, 3, 3
RUNGS = [27, 81, 243]
MAX_TRIALS = 200
BUDGETS = (10, 20, 40)  # in full-length evaluations
METHODS = ("adaptive_asha", "adaptive_asha, tpe", "random", "optuna")

# ---------------------------------------------------------------- the functions


def branin(x: Dict[str, float], z: float) -> float:
    x1, x2 = x["x1"], x["x2"]
    b = 5.1 / (4 * math.pi**2) - 0.01 * (1 - z)
    c = 5 / math.pi - 0.1 * (1 - z)
    t = 1 / (8 * math.pi) + 0.05 * (1 - z)
    return (x2 - b * x1**2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


_H_ALPHA = (1.0, 1.2, 3.0, 3.2)
_H_A = (
    (10, 3, 17, 3.5, 1.7, 8),
    (0.05, 10, 17, 0.1, 8, 14),
    (3, 3.5, 1.7, 10, 17, 8),
    (17, 8, 0.05, 10, 0.1, 14),
)
_H_P = (
    (0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886),
    (0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991),
    (0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650),
    (0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381),
)


def hartmann6(x: Dict[str, float], z: float) -> float:
    xs = [x[f"x{j + 1}"] for j in range(6)]
    total = 0.0
    for alpha, a_row, p_row in zip(_H_ALPHA, _H_A, _H_P):
        alpha -= 0.1 * (1 - z)
        total += alpha * math.exp(-sum(a * (v - p) ** 2 for a, v, p in zip(a_row, xs, p_row)))
    return -total


FUNCTIONS: Dict[str, Tuple[Callable[[Dict[str, float], float], float], Dict[str, Any], float]] = {
    "branin": (
        branin,
        {"x1": {"type": "double", "minval": -5.0, "maxval": 10.0},
         "x2": {"type": "double", "minval": 0.0, "maxval": 15.0}},
        0.397887357729738,
    ),
    "hartmann6": (
        hartmann6,
        {f"x{j + 1}": {"type": "double", "minval": 0.0, "maxval": 1.0} for j in range(6)},
        -3.322368011391339,
    ),
}

# ---------------------------------------------------------------- ledgers

Eval = Tuple[int, int, Dict[str, float], float]  # (cumulative units, units, x, value)


def regret_at(evals: Sequence[Eval], budget: int, fn: Callable[..., float], opt: float) -> float:
    """Full-fidelity regret of the incumbent within ``budget`` units (inf: nothing yet)."""
    seen = [e for e in evals if e[0] <= budget]
    if not seen:
        return math.inf
    top = max(e[1] for e in seen)
    best = min((e for e in seen if e[1] == top), key=lambda e: e[3])
    return fn(best[2], 1.0) - opt


def run_ours(name: str, space: Dict[str, Any], fn: Callable[..., float], seed: int) -> List[Eval]:
    searcher: Dict[str, Any] = {
        "name": "random" if name == "random" else "adaptive_asha",
        "metric": "value",
        "max_trials": MAX_TRIALS if name != "random" else max(BUDGETS),
        "max_length": {"batches": MAX_LENGTH},
    }
    if name != "random":
        searcher.update(divisor=DIVISOR, max_rungs=MAX_RUNGS, mode="standard",
                        sampler="tpe" if name.endswith("tpe") else "random")
    config = validate_config({
        "entrypoint": "none:None",
        "hyperparameters": dict(space, global_batch_size=1),
        "searcher": searcher,
        "reproducibility": {"experiment_seed": seed},
    })
    evals: List[Eval] = []
    trained: Dict[int, int] = {}
    total = [0]

    def metric(hp: Dict[str, Any], units: int, trial_seed: int) -> float:
        total[0] += units - trained.get(trial_seed, 0)  # each Train is followed by Validate
        trained[trial_seed] = units
        x = {k: v for k, v in hp.items() if k != "global_batch_size"}
        value = fn(x, units / MAX_LENGTH)
        evals.append((total[0], units, x, value))
        return value

    simulate(config, metric, concurrency=1, capacity=1)
    return evals


def run_optuna(space: Dict[str, Any], fn: Callable[..., float], seed: int) -> List[Eval]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=f"fn-seed{seed}",
        sampler=optuna.samplers.TPESampler(seed=seed),
        pruner=optuna.pruners.HyperbandPruner(
            min_resource=RUNGS[0], max_resource=MAX_LENGTH, reduction_factor=DIVISOR),
    )
    evals: List[Eval] = []
    total = [0]

    def objective(trial: "optuna.Trial") -> float:
        x = {k: trial.suggest_float(k, s["minval"], s["maxval"]) for k, s in sorted(space.items())}
        prev = 0
        value = math.inf
        for step in RUNGS:
            total[0] += step - prev
            prev = step
            value = fn(x, step / MAX_LENGTH)
            evals.append((total[0], step, x, value))
            trial.report(value, step)
            if step < MAX_LENGTH and trial.should_prune():
                raise optuna.TrialPruned()
        return value

    # Enough trials to spend the largest budget.
    while total[0] < max(BUDGETS) * MAX_LENGTH:
        study.optimize(objective, n_trials=10)
    return evals


def run_method(method: str, fname: str, seed: int) -> List[Eval]:
    fn, space, _ = FUNCTIONS[fname]
    if method == "optuna":
        return run_optuna(space, fn, seed)
    return run_ours(method, space, fn, seed)


# ---------------------------------------------------------------- report


def fmt(x: float) -> str:
    return "n/a" if math.isinf(x) else f"{x:.3g}"


def table(results: Dict[str, Dict[str, List[List[Eval]]]], seeds: int) -> str:
    lines = []
    for fname, (fn, _, opt) in FUNCTIONS.items():
        lines += [
            f"**{fname}** (median simple regret over {seeds} seeds; budget in full-length "
            f"evaluations of {MAX_LENGTH} units)",
            "",
            "| method | " + " | ".join(f"{b} evals" for b in BUDGETS) + " |",
            "|---|" + "---:|" * len(BUDGETS),
        ]
        med: Dict[str, List[float]] = {}
        for method in METHODS:
            runs = results[fname][method]
            med[method] = [
                statistics.median(regret_at(ev, b * MAX_LENGTH, fn, opt) for ev in runs)
                for b in BUDGETS
            ]
            lines.append(f"| {method} | " + " | ".join(fmt(v) for v in med[method]) + " |")
        peers = [m for m in METHODS if m != "adaptive_asha, tpe"]
        ratios = []
        for i, b in enumerate(BUDGETS):
            best_peer = min(med[m][i] for m in peers)
            ratios.append(med["adaptive_asha, tpe"][i] / best_peer if best_peer > 0 else math.inf)
        lines += [
            "",
            "tpe / best peer: " + ", ".join(f"{r:.2f}x at {b}" for r, b in zip(ratios, BUDGETS))
            + " (target <= 0.80x)",
            "",
        ]
    return "\n".join(lines)


def curves(
    results: Dict[str, Dict[str, List[List[Eval]]]], points: int = 40
) -> Dict[str, Dict[str, Tuple[List[float], List[float]]]]:
    """Median regret against budget (in full evaluations), per function and method."""
    out: Dict[str, Dict[str, Tuple[List[float], List[float]]]] = {}
    for fname, (fn, _, opt) in FUNCTIONS.items():
        out[fname] = {}
        xs = [max(BUDGETS) * (i + 1) / points for i in range(points)]
        for method, runs in results[fname].items():
            ys = [statistics.median(regret_at(ev, int(x * MAX_LENGTH), fn, opt) for ev in runs)
                  for x in xs]
            out[fname][method] = (xs, ys)
    return out


def run_all(seeds: int, log: Optional[Any] = sys.stderr) -> Dict[str, Dict[str, List[List[Eval]]]]:
    results: Dict[str, Dict[str, List[List[Eval]]]] = {}
    for fname in FUNCTIONS:
        results[fname] = {m: [] for m in METHODS}
        for method in METHODS:
            start = time.perf_counter()
            for seed in range(seeds):
                results[fname][method].append(run_method(method, fname, seed))
            if log:
                print(f"  {fname} {method}: {seeds} seeds in {time.perf_counter() - start:.1f} s",
                      file=log, flush=True)
    return results


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--seeds", type=int, default=50)
    p.add_argument("--json", default=None, help="also write the median curves here (plot)")
    args = p.parse_args(argv)
    start = time.perf_counter()
    results = run_all(args.seeds)
    print(table(results, args.seeds))
    print(f"Wall time: {time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"curves": curves(results), "seeds": args.seeds}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
