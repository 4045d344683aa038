/** Web UI polish: checkpoints newest first; the parallel-coordinates chart narrowed to its
 * box. (That the tables and the chart fit an 800-pixel window is layout:
 * tests/master/e2e/test_webui_asha_browser.py.) */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fireEvent, render, screen, within } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import type { Checkpoint } from "../api";
import Checkpoints from "../components/Checkpoints";
import { parcoordsWidth } from "../components/HparamViews";
import { installFakeMaster, removeFakeMaster, routes } from "./fake-master";

beforeEach(installFakeMaster);
afterEach(removeFakeMaster);

const checkpoint = (n: number, endTime: string, trialId = 7): Checkpoint => ({
  uuid: `0000000${n}-aaaa-bbbb-cccc-dddddddddddd`, trial_id: trialId, experiment_id: 3, total_batches: 100 * n,
  state: "COMPLETED", resources: { "a.pt": 10 }, metadata: {}, validation: null, end_time: endTime,
} as unknown as Checkpoint);

describe("checkpoints", () => {
  it("lists the newest first, and a click on Saved turns the order round", async () => {
    routes["GET /api/v1/experiments/3/checkpoints"] = () => [200, { checkpoints: [
      checkpoint(1, "2026-11-01T10:00:00+00:00"), checkpoint(3, "2026-11-01T12:00:00+00:00", 8),
      checkpoint(2, "2026-11-01T11:00:00+00:00")] }];
    render(<MemoryRouter><Checkpoints experimentId={3} metric="validation_loss" /></MemoryRouter>);
    const table = await screen.findByTestId("checkpoints-table");
    const uuids = () => within(table).getAllByRole("row").slice(1).map((r) => r.querySelector("code")!.textContent);
    expect(uuids()).toEqual(["00000003-aaaa-bbbb-cccc-dddddddddddd", "00000002-aaaa-bbbb-cccc-dddddddddddd",
      "00000001-aaaa-bbbb-cccc-dddddddddddd"]); // the id reads whole, though it may break after hyphens
    expect(within(table).getByText(/^Saved/).closest("th")!.getAttribute("aria-sort")).toBe("descending");
    fireEvent.click(within(table).getByText(/^Saved/));
    expect(uuids()[0]).toBe("00000001-aaaa-bbbb-cccc-dddddddddddd");
  });

  it("has no Trial column on a trial's page", async () => {
    routes["GET /api/v1/experiments/3/checkpoints"] = () => [200, { checkpoints: [
      checkpoint(1, "2026-11-01T10:00:00+00:00"), checkpoint(2, "2026-11-01T11:00:00+00:00", 8)] }];
    render(<MemoryRouter><Checkpoints experimentId={3} trialId={7} metric="validation_loss" /></MemoryRouter>);
    const table = await screen.findByTestId("checkpoints-table");
    const headers = within(table).getAllByRole("columnheader").map((h) => h.textContent);
    expect(headers).not.toContain("Trial");
    expect(within(table).getAllByRole("row")).toHaveLength(2); // trial 8's is not listed
  });
});

describe("parallel coordinates", () => {
  it("is 150 pixels an axis where there is room, else as wide as its box, down to 80 an axis", () => {
    expect(parcoordsWidth(5, 0)).toBe(750); // not measured yet
    expect(parcoordsWidth(5, 1400)).toBe(750);
    expect(parcoordsWidth(3, 1400)).toBe(520);
    expect(parcoordsWidth(5, 700)).toBe(698); // less the border
    expect(parcoordsWidth(5, 300)).toBe(400); // too narrow: it scrolls in its box
  });
});
