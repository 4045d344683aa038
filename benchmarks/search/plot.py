"""One figure for the README: digits accuracy and test-function regret against compute.

    python benchmarks/search/plot.py DIGITS_JSON FUNCTIONS_JSON OUT.png

The JSON files come from ``run.py --json`` and ``functions.py --json``; matplotlib is a
bench-only extra.
"""

import json
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(digits_path: str, functions_path: str, out: str) -> int:
    with open(digits_path) as f:
        digits = json.load(f)["curves"]
    with open(functions_path) as f:
        fns = json.load(f)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    for method, (xs, ys) in digits.items():
        ax.plot(xs, [100 * y for y in ys], label=method)
    ax.set_title("digits MLP: best accuracy so far (median of seeds)")
    ax.set_xlabel("batches trained (one worker)")
    ax.set_ylabel("validation accuracy (%)")
    ax.set_ylim(94, 99)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    for ax, (fname, methods) in zip(axes[1:], fns["curves"].items()):
        for method, (xs, ys) in methods.items():
            pts = [(x, y) for x, y in zip(xs, ys) if not math.isinf(y) and y > 0]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=method)
        ax.set_yscale("log")
        ax.set_title(f"{fname} (multi-fidelity): median simple regret, {fns['seeds']} seeds")
        ax.set_xlabel("budget (full-length evaluations)")
        ax.set_ylabel("simple regret")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
