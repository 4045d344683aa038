/** What a page says where there is nothing to show: an experiment whose trials never
 * validated had an empty "Best" row, and a trial with no hyperparameters (a Core API script
 * may have none) an empty "Hyperparameter | Value" table, and a checkpoint without metadata
 * "{}" in its Metadata column. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { render, screen, waitFor } from "@testing-library/react";
import { Metadata } from "../components/Bits";
import type { Trial } from "../api";
import { installFakeMaster, liveChannel, open, removeFakeMaster, routes } from "./fake-master";

beforeEach(installFakeMaster);
afterEach(removeFakeMaster);

const trial = { id: 4, experiment_id: 3, request_id: "r4", state: "ERROR", hparams: {}, seed: 1,
  restarts: 0, total_batches: 1, best_validation: null, latest_checkpoint: null,
  start_time: "2026-11-01T10:00:00+00:00", end_time: "2026-11-01T10:00:01+00:00" } as unknown as Trial;

function serveExperiment(state: string): void {
  routes["GET /api/v1/ui/experiments/3"] = () => [200, {
    id: 3, state, description: "failing", labels: [], archived: false, progress: 0, owner: "determined",
    parent_id: null, start_time: "2026-11-01T10:00:00+00:00", end_time: null, duration: 1, searcher: "single",
    metric: "validation_error", smaller_is_better: true, best_metric: null, num_trials: 1, config: {}, config_yaml: "", original_config_yaml: "",
    trials: [{ ...trial, state: state === "ERROR" ? "ERROR" : "ACTIVE" }], metric_names: { training: [], validation: [] },
    last_metric_id: 0, last_log_id: 0, step_unit: "batch",
  }];
}

async function shown(path: string): Promise<void> {
  const live = liveChannel();
  open(path);
  await waitFor(() => expect(live.queries).toHaveLength(1));
  live.connect();
}

describe("an experiment with no validation", () => {
  it("says so in its Best row: none once it ended, not yet while it runs", async () => {
    serveExperiment("ERROR");
    await shown("/experiments/3?tab=trials");
    await waitFor(() => expect(screen.getByTestId("best-metric").textContent).toBe("none: no trial validated"));
  });
  it("says no validation yet while it runs", async () => {
    serveExperiment("ACTIVE");
    await shown("/experiments/3?tab=trials");
    await waitFor(() => expect(screen.getByTestId("best-metric").textContent).toBe("no validation yet"));
  });
});

describe("an experiment's curves tab without metrics", () => {
  it("says there are no learning curves and why, not only a disabled menu", async () => {
    serveExperiment("ERROR");
    await shown("/experiments/3");
    expect((await screen.findByTestId("curves-empty")).textContent).toBe(
      "No learning curves: no trial reported a metric before the experiment ended.");
    expect((screen.getByLabelText("metric") as HTMLSelectElement).options[0].textContent).toBe("no metrics");
  });
  it("says they come while it runs", async () => {
    serveExperiment("ACTIVE");
    await shown("/experiments/3");
    expect((await screen.findByTestId("curves-empty")).textContent).toBe(
      "No learning curves yet: they show here as trials report training and validation metrics.");
    expect((screen.getByLabelText("metric") as HTMLSelectElement).options[0].textContent).toBe("no metrics yet");
  });
});

describe("a trial with no hyperparameters", () => {
  it("says so instead of an empty table", async () => {
    serveExperiment("ERROR");
    routes["GET /api/v1/ui/trials/4/workloads"] = () => [200, { workloads: [], total: 0, trial,
      metric_names: { training: [], validation: [] }, last_metric_id: 0, last_log_id: 0 }];
    routes["GET /api/v1/trials/4/logs"] = () => [200, { logs: [] }];
    routes["GET /api/v1/ui/trials/4/metrics"] = () => [200, { batches: [], values: [] }];
    routes["GET /api/v1/trials/4/gpu-metrics"] = () => [200, { gpu_metrics: [] }];
    routes["GET /api/v1/experiments/3/checkpoints"] = () => [200, { checkpoints: [] }];
    await shown("/experiments/3/trials/4");
    const hp = await screen.findByTestId("hparams");
    expect(hp.textContent).toBe("No hyperparameters.");
    expect(hp.tagName).toBe("P");
    // Nor metrics: it ended before it reported any (it said "No metrics yet.").
    expect((await screen.findByTestId("trial-chart-empty")).textContent).toBe("No metrics: the trial ended before it reported any.");
  });
});

describe("metadata", () => {
  it("leaves the cell empty when there is none, and shows it as JSON when there is", () => {
    for (const none of [{}, null, undefined]) expect(render(<Metadata value={none} />).container.textContent).toBe("");
    expect(render(<Metadata value={{ steps_completed: 4 }} />).container.textContent).toBe('{"steps_completed":4}');
  });
});
