/** The trials table with many hyperparameters: a sortable column each (shown on wide
 * windows) and one cell of name-value pairs (shown on narrower ones, the CSS's choice). That
 * it fits an 800-pixel window is layout: tests/master/e2e/test_webui_browser.py. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import type { Trial } from "../api";
import { FOLD_HPARAMS, splitConstantHparams } from "../pages/ExperimentPage";
import { installFakeMaster, liveChannel, open, removeFakeMaster, routes } from "./fake-master";

beforeEach(installFakeMaster);
afterEach(removeFakeMaster);

const trial = (id: number, hparams: Record<string, unknown>): Trial => ({
  id, experiment_id: 3, request_id: `r${id}`, state: "COMPLETED", hparams, seed: 1, restarts: 0,
  total_batches: 10 * id, best_validation: 1 / id, latest_checkpoint: null,
  start_time: "2026-11-01T10:00:00+00:00", end_time: null,
} as unknown as Trial);

function serve(trials: Trial[]): void {
  routes["GET /api/v1/ui/experiments/3"] = () => [200, {
    id: 3, state: "COMPLETED", description: "exp 3", labels: [], archived: false, progress: 1, owner: "determined",
    parent_id: null, start_time: "2026-11-01T10:00:00+00:00", end_time: null, duration: 60, searcher: "random",
    metric: "validation_loss", smaller_is_better: true, best_metric: null, num_trials: trials.length,
    config: {}, config_yaml: "", original_config_yaml: "", trials, metric_names: { training: [], validation: [] }, last_metric_id: 0, last_log_id: 0,
  }];
}

/** The trials tab, its live channel connected (the page loads once it is). */
async function openTrials(): Promise<void> {
  const live = liveChannel();
  open("/experiments/3?tab=trials");
  await waitFor(() => expect(live.queries).toHaveLength(1));
  live.connect();
}

const MANY = {
  global_batch_size: 16, lr: 0.1, dropout: 0.2, optimizer: { name: "sgd", momentum_coefficient: 0.9 },
  learning_rate_warmup_schedule: "linear-warmup-then-cosine-decay", weight_decay_regularization: 0.0001,
  data_augmentation_policy: "random-resized-crop-and-horizontal-flip",
};

// MANY with every value changed: each of the eight varies.
const OTHER = {
  global_batch_size: 32, lr: 0.01, dropout: 0.3, optimizer: { name: "adam", momentum_coefficient: 0.8 },
  learning_rate_warmup_schedule: "constant", weight_decay_regularization: 0.001, data_augmentation_policy: "none",
};

describe("trials table hyperparameters", () => {
  it("folds more than a few into one cell of pairs, and keeps a sortable column each", async () => {
    serve([trial(1, MANY), trial(2, OTHER)]);
    await openTrials();
    const table = await screen.findByTestId("trials-table");
    const header = (name: string) => within(table).getAllByRole("columnheader").find((h) => h.textContent?.replace(/ [▲▼]$/, "") === name)!;
    expect(header("Hyperparameters").className).toBe("hp-folded");
    const pairs = within(table).getAllByTestId("hparam-pairs");
    expect(pairs).toHaveLength(2);
    expect([...pairs[0].querySelectorAll(".hp-pair")].map((p) => p.textContent)).toEqual([
      "global_batch_size 16", "lr 0.1", "dropout 0.2", "optimizer.name sgd", "optimizer.momentum_coefficient 0.9",
      "learning_rate_warmup_schedule linear-warmup-then-cosine-decay", "weight_decay_regularization 1e-4",
      "data_augmentation_policy random-resized-crop-and-horizontal-flip"]);
    // Each one's own column stays (wide windows), sortable, as do the metric, state and batches.
    expect(header("optimizer.momentum_coefficient").className).toBe("sortable wrap hp-column");
    for (const name of ["State", "Batches", "Best validation_loss"]) expect(header(name).className).toContain("sortable");
    const ids = () => within(table).getAllByRole("row").slice(1).map((r) => r.querySelectorAll("td")[1].textContent?.replace(" ★", ""));
    fireEvent.click(header("lr"));
    await waitFor(() => expect(ids()).toEqual(["2", "1"]));
  });

  it(`keeps up to ${FOLD_HPARAMS} as columns alone`, async () => {
    serve([trial(1, { global_batch_size: 16, lr: 0.1, dropout: 0.2 })]);
    await openTrials();
    const table = await screen.findByTestId("trials-table");
    expect(within(table).queryByText("Hyperparameters")).toBeNull();
    expect(within(table).queryByTestId("hparam-pairs")).toBeNull();
    expect(within(table).getByText("dropout").closest("th")!.className).toBe("sortable wrap");
  });

  it("says the ones with one value in every trial once above the table, as det drops constant ids", async () => {
    serve([trial(1, MANY), trial(2, { ...MANY, lr: 0.01 }), trial(3, { ...MANY, lr: 0.001, optimizer: { name: "adam", momentum_coefficient: 0.9 } })]);
    await openTrials();
    const table = await screen.findByTestId("trials-table");
    expect(screen.getByTestId("constant-hparams").textContent).toBe(
      "same in every trial: global_batch_size=16, dropout=0.2, optimizer.momentum_coefficient=0.9, "
      + "learning_rate_warmup_schedule=linear-warmup-then-cosine-decay, weight_decay_regularization=1e-4, "
      + "data_augmentation_policy=random-resized-crop-and-horizontal-flip");
    const headers = within(table).getAllByRole("columnheader").map((h) => h.textContent?.replace(/ [▲▼]$/, ""));
    expect(headers.slice(-2)).toEqual(["lr", "optimizer.name"]);  // two vary: a column each, not folded
    expect(within(table).queryByTestId("hparam-pairs")).toBeNull();
  });

  it("keeps every column for one trial, and a name some trial lacks varies", () => {
    expect(splitConstantHparams([{ a: 1, b: 2 }])).toEqual({ varying: ["a", "b"], constant: [] });
    expect(splitConstantHparams([{ a: 1, b: 2 }, { a: 1 }, { a: 1, b: 2 }])).toEqual({ varying: ["b"], constant: [["a", 1]] });
    expect(splitConstantHparams([{ a: [1, 2] }, { a: [1, 2] }])).toEqual({ varying: [], constant: [["a", [1, 2]]] });
  });
});
