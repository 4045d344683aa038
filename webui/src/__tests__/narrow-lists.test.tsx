/** At 800 pixels the experiment list, the task list and a model's versions scrolled
 * sideways in their boxes: below 1000 pixels the experiment list's Owner column goes (the
 * owner shows under the description) and so does the task list's Slots column; long
 * labels, waiting notes, times, ids and metric names wrap. (That the tables fit an
 * 800-pixel window is layout: tests/master/e2e/test_webui_models_browser.py and
 * test_webui_tasks_browser.py.) */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { screen, waitFor, within } from "@testing-library/react";
import type { ExperimentRow, ModelVersion, TaskRow } from "../api";
import { installFakeMaster, liveChannel, open, removeFakeMaster, routes } from "./fake-master";

beforeEach(installFakeMaster);
afterEach(removeFakeMaster);

const experiment = (id: number, over: Partial<ExperimentRow> = {}): ExperimentRow => ({
  id, state: "COMPLETED", description: `exp ${id}`, labels: [], archived: false, progress: 1, owner: "determined",
  parent_id: null, start_time: "2026-11-01T10:00:00+00:00", end_time: null, duration: 60, searcher: "single",
  metric: "validation_loss", smaller_is_better: true, best_metric: 0.1, num_trials: 1, ...over,
});

async function shown(path: string): Promise<void> {
  const live = liveChannel();
  open(path);
  await waitFor(() => expect(live.queries).toHaveLength(1));
  live.connect();
}

const header = (table: HTMLElement, title: string) =>
  within(table).getAllByRole("columnheader").find((h) => h.textContent!.replace(/[▲▼]/g, "").trim() === title)!;

describe("experiment list", () => {
  it("hides Owner below 1000 pixels and shows each row's owner under its description there", async () => {
    routes["GET /api/v1/ui/experiments"] = () => [200, { experiments: [experiment(1, { owner: "alice", labels: ["long-label-for-wrapping"] })],
      total: 1, owners: ["alice"], labels: [] }];
    await shown("/experiments");
    const table = await screen.findByTestId("experiment-table");
    await within(table).findByText("exp 1");
    expect(header(table, "Owner").className).toContain("wide-only");
    const owner = within(table).getByTestId("row-owner");
    expect(owner.className).toContain("narrow-only");
    expect(owner.textContent).toBe("alice");
    expect(owner.closest("td")).toBe(within(table).getByText("exp 1").closest("td"));
    for (const title of ["Labels", "State"]) expect(header(table, title).className).toContain("wrap"); // a waiting note wraps
  });
});

describe("task list", () => {
  it("lets the description, the state (a waiting note), the start time and the agent wrap; hides Slots below 1000 pixels", async () => {
    const task: TaskRow = { id: "a1", kind: "command", owner: "determined", state: "RUNNING", description: "a long description",
      slots: 1, agent_id: "embedded", slot_ids: [1], exit_code: null, end_reason: null, start_time: "2026-01-01T00:00:00",
      end_time: null, url: null } as TaskRow;
    routes["GET /api/v1/tasks"] = () => [200, { tasks: [task] }];
    await shown("/tasks");
    const table = await screen.findByTestId("task-table");
    await within(table).findByText("a long description");
    for (const title of ["Description", "State", "Started", "Agent"]) expect(header(table, title).className).toContain("wrap");
    expect(within(table).getByText("a long description").className).toBe("desc");
    expect(header(table, "Slots").className).toContain("wide-only");
  });
});

describe("a model's versions", () => {
  it("let the time, the checkpoint's UUID (after its hyphens) and the metric's name wrap", async () => {
    const version: ModelVersion = {
      version: 1, creation_time: "2026-11-02T10:00:00+00:00",
      checkpoint: { uuid: "acdf4caa-5369-4301-883a-1df689b4b87d", trial_id: 7, experiment_id: 3, total_batches: 40,
        state: "COMPLETED", resources: {}, metadata: {}, validation: null, end_time: "2026-11-02T09:00:00+00:00" },
      searcher_metric: { name: "validation_loss", smaller_is_better: true, value: 0.2 },
    } as unknown as ModelVersion;
    routes["GET /api/v1/models/mnist/versions"] = () => [200, { model: {
      name: "mnist", description: "", metadata: {}, creation_time: "2026-11-01T10:00:00+00:00",
      last_updated_time: "2026-11-01T10:00:00+00:00", num_versions: 1 }, versions: [version] }];
    await shown("/models/mnist");
    const table = await screen.findByTestId("version-table");
    const id = await within(table).findByText((_, e) => e?.tagName === "CODE" && e.textContent === version.checkpoint.uuid);
    expect(id.querySelectorAll("wbr")).toHaveLength(4);
    for (const title of ["Registered", "Checkpoint", "Searcher metric"]) expect(header(table, title).className).toContain("wrap");
  });
});
