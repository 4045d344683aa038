/** A script's steps are in its searcher's unit (the master's `step_unit`, computed by
 * determined/common/entrypoint.py): tables, the rungs and chart axes say "epochs" for a
 * script searching `max_length: {epochs: 3}`, and "batches" for a Trial class as before. */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { cleanup, render, screen, waitFor, within } from "@testing-library/react";
import type { Trial } from "../api";
import Curves from "../components/Curves";
import { fitX, WHOLE_INCRS, wholeTicks, xScaleRange } from "../components/LineChart";
import { STEP_UNITS, stepsText, stepsTitle, stepUnits } from "../format";
import { installFakeMaster, liveChannel, open, removeFakeMaster, routes } from "./fake-master";

describe("step units", () => {
  it("name each unit, in the plural for headers and agreeing with a count", () => {
    expect(STEP_UNITS).toEqual({ batch: "batches", epoch: "epochs", record: "records", step: "steps" });
    expect(["batch", "epoch", "record", "step"].map((u) => stepUnits(u))).toEqual(["batches", "epochs", "records", "steps"]);
    expect(["batch", "epoch", "record", "step"].map((u) => stepsTitle(u))).toEqual(["Batches", "Epochs", "Records", "Steps"]);
    expect([stepsText(1, "epoch"), stepsText(2, "epoch"), stepsText(1, "batch"), stepsText(0, "record"), stepsText(1200, "step")])
      .toEqual(["1 epoch", "2 epochs", "1 batch", "0 records", "1,200 steps"]);
  });
  it("count batches when the master does not say (an older master) or names an unknown unit", () => {
    expect([stepUnits(undefined), stepUnits(null), stepUnits("weeks"), stepUnits("toString")]).toEqual(
      ["batches", "batches", "batches", "batches"]);
    expect(stepsTitle(undefined)).toBe("Batches");
    expect(stepsText(3, "constructor")).toBe("3 batches");
  });
});

/** jsdom has no 2D canvas (uPlot draws on one): a context and paths that accept every call. */
function stubCanvas(): void {
  const anything: any = new Proxy(function () {}, {
    get: (_t, key) => (key === Symbol.toPrimitive ? () => 0 : anything),
    apply: () => anything,
    set: () => true,
  });
  HTMLCanvasElement.prototype.getContext = (() => anything) as never;
  (globalThis as Record<string, unknown>).Path2D = function Path2D() { return anything; };
}

describe("learning curves' x axis", () => {
  beforeAll(stubCanvas);
  afterEach(cleanup);
  const data = { metric: "loss", kind: "validation" as const, series: [
    { trial_id: 1, batches: [1, 2, 3], values: [0.5, 0.4, 0.3], time: [1, 2, 3], count: 3, records_per_batch: 16 }] };
  const options = () => [...(screen.getByLabelText("x axis") as HTMLSelectElement).options].map((o) => o.textContent);

  it("names a script's steps and has no records axis for them", () => {
    render(<Curves data={data} trials={[]} bestTrialId={null} unit="epoch" />);
    expect(options()).toEqual(["epochs", "time (s)"]);
    // The chart's x axis (its legend's first column) names them too.
    expect(screen.getByTestId("learning-curves").textContent).toContain("epochs");
    expect(screen.getByTestId("learning-curves").textContent).not.toContain("batches");
  });
  it("ticks steps at whole numbers only: no 4.5 epochs, no 0.92 batches", async () => {
    const one = { ...data, series: [{ ...data.series[0], batches: [1], values: [0.5], time: [1], count: 1 }] };
    const four = { ...data, series: [{ ...data.series[0], batches: [4, 8], values: [0.5, 0.4], time: [1, 2], count: 2 }] };
    for (const [d, want] of [[one, "1"], [four, "4,5,6,7,8"]] as const) {
      const { unmount } = render(<Curves data={d} trials={[]} bestTrialId={null} unit="epoch" />);
      const chart = screen.getByTestId("learning-curves");
      await waitFor(() => expect(chart.dataset.xTicks).toBe(want));
      unmount();
    }
    expect(WHOLE_INCRS.slice(0, 4)).toEqual([1, 2, 5, 10]);
    expect(wholeTicks(0.9, 1.1, 0.02)).toEqual([1]);
    expect(wholeTicks(3.84, 8.16, 0.5)).toEqual([4, 5, 6, 7, 8]);
    expect(wholeTicks(-8, 2008, 500)).toEqual([0, 500, 1000, 1500, 2000]);
  });
  it("shows one step with its own tick alone (epoch 12 had ticks at 11 and 13)", async () => {
    expect(fitX(12, 12, true)).toEqual([11.5, 12.5]);
    expect(xScaleRange(null, null, 1200, 1200, true)).toEqual([1199.5, 1200.5]);
    expect(fitX(12, 12)).toEqual([10.8, 13.2]); // time: as before
    expect(fitX(4, 8, true)).toEqual(fitX(4, 8));
    const twelve = { ...data, series: [{ ...data.series[0], batches: [12], values: [0.07], time: [1], count: 1 }] };
    render(<Curves data={twelve} trials={[]} bestTrialId={null} unit="epoch" />);
    const chart = screen.getByTestId("learning-curves");
    await waitFor(() => expect(chart.dataset.xTicks).toBe("12"));
  });
  it("keeps batches and records for a Trial class", () => {
    render(<Curves data={data} trials={[]} bestTrialId={null} unit="batch" />);
    expect(options()).toEqual(["batches", "records", "time (s)"]);
    expect(screen.getByTestId("learning-curves").textContent).toContain("batches");
  });
});

describe("an experiment page's trials table", () => {
  beforeEach(installFakeMaster);
  afterEach(removeFakeMaster);

  const trial = { id: 1, experiment_id: 3, request_id: "r1", state: "COMPLETED", hparams: { lr: 0.1 }, seed: 1,
    restarts: 0, total_batches: 3, best_validation: 0.25, latest_checkpoint: null,
    start_time: "2026-11-01T10:00:00+00:00", end_time: null } as unknown as Trial;

  function serve(stepUnit: string | undefined): void {
    routes["GET /api/v1/ui/experiments/3"] = () => [200, {
      id: 3, state: "COMPLETED", description: "exp 3", labels: [], archived: false, progress: 1, owner: "determined",
      parent_id: null, start_time: "2026-11-01T10:00:00+00:00", end_time: null, duration: 60, searcher: "single",
      metric: "loss", smaller_is_better: true, best_metric: 0.25, num_trials: 1, config: {}, config_yaml: "", original_config_yaml: "",
      trials: [trial], metric_names: { training: [], validation: [] }, last_metric_id: 0, last_log_id: 0,
      ...(stepUnit ? { step_unit: stepUnit } : {}),
    }];
  }

  async function headers(): Promise<string[]> {
    const live = liveChannel();
    open("/experiments/3?tab=trials");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    live.connect();
    const table = await screen.findByTestId("trials-table");
    return within(table).getAllByRole("columnheader").map((h) => h.textContent?.replace(/ [▲▼]$/, "") ?? "");
  }

  it("heads a script's steps with its unit", async () => {
    serve("epoch");
    const names = await headers();
    expect(names).toContain("Epochs");
    expect(names).not.toContain("Batches");
  });
  it("heads a Trial class's steps with batches", async () => {
    serve("batch");
    expect(await headers()).toContain("Batches");
  });
});
