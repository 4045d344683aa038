"""The order of ``det``'s checkpoint and workload listings, and a trial's best checkpoint.

Listings of checkpoints (``det e lc``, ``det c list``) and of workloads (``det t
describe``, ``det e describe``) are newest first, as the web UI lists them; ``--best N``
ranks by the searcher metric, best first (0.13's ``--best``). ``det t describe`` names
the trial's best checkpoint (by the searcher metric and ``smaller_is_better``) and its
latest, each on a labelled line. Read from a real local run's records (the master's
schema and query code: what a master answers).
"""

import csv
import io
import json
import pathlib

import pytest
import yaml

from det_cli_testing import (hidden_names, run_det, run_det_in_terminal, table_headers,
                             table_lines, table_rule)

pytestmark = pytest.mark.timeout(600)

TINY = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tiny_pytorch"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished local trial validated and checkpointed at 20, 40 and 60 batches,
    whose searcher metric is its validation loss with *larger* better: its best
    checkpoint is an early one (the loss falls as it trains), not its latest."""
    tmp = tmp_path_factory.mktemp("order")
    cfg = yaml.safe_load((TINY / "const.yaml").read_text())
    cfg["searcher"].update(max_length={"batches": 60}, smaller_is_better=False)
    cfg["min_checkpoint_period"] = {"batches": 20}
    (tmp / "c.yaml").write_text(yaml.safe_dump(cfg))
    out = run_det(["e", "create", tmp / "c.yaml", TINY, "--local-dir", tmp / "local",
                   "--json", "--no-progress"])
    assert out.returncode == 0, out.stderr
    local = tmp / "local"
    checkpoints = json.loads(run_det(["e", "lc", "1", "--local-dir", local, "--json"]).stdout)
    return local, json.loads(out.stdout)["trials"][0]["trial_id"], checkpoints


def det(local, *args):
    out = run_det([*args, "--local-dir", local])
    assert out.returncode == 0, out.stderr
    return out.stdout


def rows_of(table):
    """The cells of a (piped) table's rows."""
    return [[c.strip() for c in line.split("|")] for line in table[table_rule(table) + 1:]]


def test_checkpoints_are_listed_newest_first(run):
    local, _, checkpoints = run
    assert [ck["batches"] for ck in checkpoints] == [60, 40, 20], checkpoints
    for args in (["e", "lc", "1"], ["e", "list-checkpoints", "1"], ["c", "list", "1"]):
        table = det(local, *args).splitlines()
        assert [row[1] for row in rows_of(table)] == ["60", "40", "20"], table
        listed = list(csv.DictReader(io.StringIO(det(local, *args, "--csv"))))
        assert [r["uuid"] for r in listed] == [ck["uuid"] for ck in checkpoints], listed


def test_best_n_ranks_by_the_searcher_metric_best_first(run):
    local, _, checkpoints = run
    # Larger is better here; only completed checkpoints with the metric count.
    ranked = sorted((ck for ck in checkpoints if ck["state"] == "COMPLETED"
                     and ck["validation_metric"] is not None),
                    key=lambda ck: -ck["validation_metric"])
    assert len(ranked) >= 2, checkpoints
    best = json.loads(det(local, "e", "lc", "1", "--best", "2", "--json"))
    assert [ck["uuid"] for ck in best] == [ck["uuid"] for ck in ranked[:2]], best
    table = det(local, "c", "list", "1", "--best", "1").splitlines()
    assert [row[4] for row in rows_of(table)] == [ranked[0]["uuid"]], table


@pytest.mark.parametrize("args, words", [
    (["e", "lc", "--help"], ["newest first", "--best N", "best first"]),
    (["c", "list", "--help"], ["newest first", "--best N", "best first"]),
    (["t", "describe", "--help"], ["best checkpoint", "latest", "newest first"]),
    (["e", "describe", "--help"], ["newest first"]),
])
def test_help_says_the_order(args, words):
    out = run_det(args)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert all(word in text for word in words), text


def test_trial_describe_names_its_best_and_its_latest_checkpoint(run):
    """It showed the latest checkpoint only (headed "checkpoint"): the best, by the
    searcher metric and smaller_is_better, is named too, each line labelled."""
    local, trial_id, checkpoints = run
    completed = [ck for ck in checkpoints if ck["state"] == "COMPLETED"]
    best = max((ck for ck in completed if ck["validation_metric"] is not None),
               key=lambda ck: ck["validation_metric"])
    latest = max(completed, key=lambda ck: ck["batches"])
    assert best["uuid"] != latest["uuid"], checkpoints  # the point of this run
    text = det(local, "t", "describe", trial_id).splitlines()
    best_line = next(line for line in text if line.startswith("Best checkpoint"))
    assert best_line.startswith(
        f"Best checkpoint (highest validation_loss): {best['uuid']}, {best['batches']} "
        "batches, validation_loss "), text
    assert f"Latest checkpoint: {latest['uuid']}, {latest['batches']} batches" in text, text
    # The trial table no longer heads the latest one "checkpoint".
    assert "checkpoint" not in " ".join(table_lines("\n".join(text), "Trial")[:2]), text
    as_json = json.loads(det(local, "t", "describe", trial_id, "--json"))
    assert (as_json["best_checkpoint"], as_json["latest_checkpoint"]) == (
        best["uuid"], latest["uuid"]), as_json
    trial_csv = det(local, "t", "describe", trial_id, "--csv").split("\n\n")[0]
    (row,) = csv.DictReader(io.StringIO(trial_csv))
    assert (row["best_checkpoint"], row["latest_checkpoint"]) == (best["uuid"], latest["uuid"])
    # On an 80-column terminal the lines fold, each UUID whole.
    code, shown = run_det_in_terminal(["t", "describe", trial_id, "--local-dir", local],
                                      columns=80)
    assert code == 0 and all(len(line) <= 80 for line in shown.splitlines()), shown
    assert best["uuid"] in shown and latest["uuid"] in shown, shown
    assert f"(highest validation_loss): {best['uuid']}" in shown, shown


@pytest.mark.parametrize("args, title", [(["e", "lt", "1"], None),
                                         (["e", "list-trials", "1"], None),
                                         (["e", "describe", "1"], "Trials")])
def test_trial_tables_head_the_latest_checkpoint_so(run, args, title):
    """``det e lt`` and ``det e describe`` headed a trial's latest checkpoint just
    "checkpoint" (as the workloads' own checkpoint column below it): "latest
    checkpoint", piped and in the hidden note of an 80-column terminal."""
    local, trial_id, checkpoints = run
    latest = max((ck for ck in checkpoints if ck["state"] == "COMPLETED"),
                 key=lambda ck: ck["batches"])
    piped = det(local, *args)
    table = table_lines(piped, title) if title else piped.splitlines()
    headers = table_headers(table)
    assert "latest checkpoint" in headers and "checkpoint" not in headers, table
    row = rows_of(table)[0]
    assert row[headers.index("latest checkpoint")] == latest["uuid"], table
    code, shown = run_det_in_terminal([*args, "--local-dir", local], columns=80)
    assert code == 0 and all(len(line) <= 80 for line in shown.splitlines()), shown
    narrow = table_lines(shown, title) if title else shown.splitlines()
    assert "latest checkpoint" in table_headers(narrow) + hidden_names(narrow), shown
    assert "checkpoint" not in hidden_names(narrow), shown


def test_workloads_are_listed_newest_first(run):
    local, trial_id, _ = run
    described = json.loads(det(local, "t", "describe", trial_id, "--json"))
    batches = [w["batches"] for w in described["workloads"]]
    assert batches == sorted(batches, reverse=True) and batches[0] == 60, batches
    for args, title in ((["t", "describe", trial_id], "Workloads"),
                        (["e", "describe", "1"], "Workloads")):
        table = table_lines(det(local, *args), title)
        column = 1 if args[0] == "t" else 2  # trial | batches, or exp | trial | batches
        assert [int(row[column]) for row in rows_of(table)] == batches, table
    _, workloads = det(local, "t", "describe", trial_id, "--csv").split("\n\n")
    assert [int(r["batches"]) for r in csv.DictReader(io.StringIO(workloads))] == batches
    # --json --metrics: the trial's steps keep 0.13's order, oldest first.
    steps = json.loads(det(local, "t", "describe", trial_id, "--metrics", "--json"))["steps"]
    assert [s["total_batches"] for s in steps] == sorted(batches), steps


def test_checkpoint_lines_say_which_and_what_is_missing():
    from determined.cli._experiment_show import ranked_checkpoints
    from determined.cli._trial import checkpoint_lines

    uuids = [f"4f9a1c2e-1111-2222-3333-44445555666{i}" for i in range(4)]
    cks = [{"uuid": uuids[0], "state": "COMPLETED", "total_batches": 10,
            "validation": {"acc": 0.9}},
           {"uuid": uuids[1], "state": "COMPLETED", "total_batches": 20,
            "validation": {"acc": float("nan")}},
           {"uuid": uuids[2], "state": "DELETED", "total_batches": 30,
            "validation": {"acc": 0.99}},
           {"uuid": uuids[3], "state": "COMPLETED", "total_batches": 40, "validation": None}]
    best = ranked_checkpoints(cks, "acc", smaller_is_better=False)[0]
    assert checkpoint_lines(cks, best, "acc", False, "epochs") == [
        f"Best checkpoint (highest acc): {uuids[0]}, 10 epochs, acc 0.9",
        f"Latest checkpoint: {uuids[3]}, 40 epochs"]
    # Smaller is better: the same ranking turned round (NaN never best, DELETED left out).
    assert ranked_checkpoints(cks, "acc", smaller_is_better=True)[0] is cks[0]
    assert checkpoint_lines(cks[3:], None, "acc", True, "batches") == [
        "Best checkpoint (lowest acc): none (no completed checkpoint has a validation of acc)",
        f"Latest checkpoint: {uuids[3]}, 40 batches"]
    assert checkpoint_lines(cks[2:3], None, "acc", True, "batches") == [
        "Checkpoints: none completed yet"]
