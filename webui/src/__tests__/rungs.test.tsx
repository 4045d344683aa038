/** The Rungs tab shows the searcher's own brackets and rungs (``/ui/experiments/{id}/rungs``):
 * with several brackets, each rung's heading names its bracket, and a trial of a later
 * bracket is listed only under its own bracket's rungs. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { render, screen, waitFor, within } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import { Rungs, rungsByBracket, type RungsResponse } from "../components/ExperimentExtras";
import { callsTo, installFakeMaster, liveChannel, open, removeFakeMaster, routes } from "./fake-master";

const TWO_BRACKETS: RungsResponse = {
  metric: "validation_loss",
  unit: "epoch",
  time_metric: null,
  brackets: [{ bracket: 0, lengths: [4, 16] }, { bracket: 1, lengths: [16] }],
  rungs: [
    { bracket: 0, rung: 0, length: 4, trials: [
      { trial_id: 1, metric: 0.2, promoted: true }, { trial_id: 2, metric: 0.5, promoted: false }] },
    { bracket: 0, rung: 1, length: 16, trials: [{ trial_id: 1, metric: 0.1, promoted: false }] },
    { bracket: 1, rung: 0, length: 16, trials: [
      { trial_id: 3, metric: 0.15, promoted: false }, { trial_id: 4, metric: null, promoted: false }] },
  ],
};

function show(data: RungsResponse, unit = "batch") {
  routes["GET /api/v1/ui/experiments/7/rungs"] = () => [200, data];
  render(<MemoryRouter><Rungs experimentId={7} unit={unit} /></MemoryRouter>);
}

const headings = () => screen.getAllByRole("heading").map((h) => h.textContent?.replace(/\s+/g, " ").trim());
const trialsUnder = (el: HTMLElement) => within(el).queryAllByRole("link").map((a) => a.textContent);

describe("rungs", () => {
  beforeEach(installFakeMaster);
  afterEach(removeFakeMaster);

  it("group by bracket, each rung headed by its bracket and length in the searcher's unit", async () => {
    show(TWO_BRACKETS);
    await screen.findByTestId("rungs");
    expect(headings()).toEqual([
      "Bracket 1 · Rung 1: 4 epochs 2 trials, 1 went on",
      "Bracket 1 · Rung 2: 16 epochs 1 trial, 0 went on",
      "Bracket 2 · Rung 1: 16 epochs 2 trials, 0 went on",
    ]);
    const first = screen.getByTestId("bracket-1");
    const second = screen.getByTestId("bracket-2");
    expect(trialsUnder(first.querySelector(".rung") as HTMLElement)).toEqual(["trial 1", "trial 2"]);
    expect(trialsUnder(first)).not.toContain("trial 3");
    expect(trialsUnder(second)).toEqual(["trial 3", "trial 4"]);
    expect(first.querySelector("li.promoted")?.textContent).toContain("→ promoted");
  });

  it("name no bracket when there is one, and fall back to the page's step unit", async () => {
    const { brackets = [], rungs } = TWO_BRACKETS;
    show({ metric: "loss", brackets: brackets.slice(0, 1), rungs: rungs.slice(0, 2) });
    await screen.findByTestId("rungs");
    expect(headings()).toEqual(["Rung 1: 4 batches 2 trials, 1 went on", "Rung 2: 16 batches 1 trial, 0 went on"]);
  });

  it("say so when no rung has a result yet (a search that has not validated)", async () => {
    show({ ...TWO_BRACKETS, rungs: TWO_BRACKETS.rungs.map((r) => ({ ...r, trials: [] })) });
    expect(await screen.findByText("No trial has finished a rung yet.")).toBeTruthy();
  });

  it("keep the master's order within each bracket", () => {
    expect(rungsByBracket(TWO_BRACKETS.rungs).map(([b, rs]) => [b, rs.map((r) => r.length)])).toEqual([[0, [4, 16]], [1, [16]]]);
    expect(rungsByBracket([{ length: 3, trials: [] }]).map(([b]) => b)).toEqual([0]);
  });
});

describe("a link to the rungs of a search without rungs", () => {
  beforeEach(installFakeMaster);
  afterEach(removeFakeMaster);

  it("opens the curves: a random search has no Rungs tab, and no page of 'no trial has finished a rung yet'", async () => {
    routes["GET /api/v1/ui/experiments/7"] = () => [200, {
      id: 7, state: "COMPLETED", description: "random", labels: [], archived: false, progress: 1, owner: "determined",
      parent_id: null, start_time: "2026-11-01T10:00:00+00:00", end_time: null, duration: 1, searcher: "random",
      metric: "validation_loss", smaller_is_better: true, best_metric: null, num_trials: 0, config: {}, config_yaml: "", original_config_yaml: "",
      trials: [], metric_names: { training: [], validation: [] }, last_metric_id: 0, last_log_id: 0, step_unit: "batch",
    }];
    const live = liveChannel();
    open("/experiments/7?tab=rungs");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    live.connect();
    await waitFor(() => expect(document.querySelector("nav.tabs button.active")?.textContent).toBe("curves"));
    expect([...document.querySelectorAll("nav.tabs button")].map((b) => b.textContent)).not.toContain("rungs");
    expect(screen.queryByText("No trial has finished a rung yet.")).toBeNull();
    expect(callsTo("/api/v1/ui/experiments/7/rungs")).toHaveLength(0);
  });
});
