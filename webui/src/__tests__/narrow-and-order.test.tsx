/** Web UI polish: checkpoints newest first (on a trial's page, the newest five until "show
 * all"); the failure box's paths relative to the model directory; a busy slot links to its
 * task; a long workloads table collapsed to its newest rows; the parallel-coordinates chart
 * narrowed to its box. (That the tables and the chart
 * fit an 800-pixel window is layout: tests/master/e2e/test_webui_asha_browser.py.) */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import type { Checkpoint, Trial } from "../api";
import Checkpoints from "../components/Checkpoints";
import { parcoordsWidth } from "../components/HparamViews";
import { failureSummary, modelDirPaths } from "../failure";
import { agentDetails, taskPath } from "../pages/ClusterPage";
import { shownWorkloads, WORKLOADS_COLLAPSED } from "../pages/TrialPage";
import { installFakeMaster, liveChannel, open, removeFakeMaster, routes } from "./fake-master";

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
    // Each state a badge, as the trials table shows trials' states.
    expect(within(table).getAllByTestId("state").map((b) => [b.textContent, b.className])).toEqual(
      Array(3).fill(["COMPLETED", "state state-completed"]));
  });

  it("collapsed: shows the first rows in the table's order, newest first, with a 'show all' toggle", async () => {
    const hour = (n: number) => `2026-11-01T${String(n).padStart(2, "0")}:00:00+00:00`;
    routes["GET /api/v1/experiments/3/checkpoints"] = () => [200, { checkpoints:
      Array.from({ length: 8 }, (_, i) => checkpoint(i + 1, hour(i + 1))) }];
    render(<MemoryRouter><Checkpoints experimentId={3} trialId={7} metric="validation_loss" collapsed={5} /></MemoryRouter>);
    const table = await screen.findByTestId("checkpoints-table");
    const batches = () => within(table).getAllByRole("row").slice(1).map((r) => r.querySelectorAll("td")[1].textContent);
    expect(batches()).toEqual(["800", "700", "600", "500", "400"]);
    expect(screen.getByTestId("checkpoints-pager").textContent).toContain("5 of 8 checkpoints");
    // Sorting sorts them all: the oldest five, oldest first.
    fireEvent.click(within(table).getByText(/^Saved/));
    expect(batches()).toEqual(["100", "200", "300", "400", "500"]);
    fireEvent.click(screen.getByRole("button", { name: "show all 8" }));
    expect(batches()).toHaveLength(8);
    fireEvent.click(screen.getByTestId("checkpoints-fewer"));
    expect(batches()).toHaveLength(5);
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

describe("failure box paths", () => {
  it("makes paths in a trial's working directory relative to the model directory", () => {
    expect(modelDirPaths('File "/tmp/det-workdirs/exp1-trial2-pid9/model_def.py", line 3, in train_batch'))
      .toBe('File "model_def.py", line 3, in train_batch');
    expect(modelDirPaths("FileNotFoundError: [Errno 2] No such file or directory: '/scratch/w/exp12-trial345-pid6789-of6000/data/x.csv'"))
      .toBe("FileNotFoundError: [Errno 2] No such file or directory: 'data/x.csv'");
    expect(modelDirPaths("module 'm' not found in /tmp/det-workdirs/exp1-trial2-pid9 (expected m.py)"))
      .toBe("module 'm' not found in the model directory (expected m.py)");
    expect(modelDirPaths("C:\\Temp\\det-workdirs\\exp1-trial2-pid9\\model_def.py")).toBe("model_def.py");
    // Other paths, and names that only look alike, stay.
    expect(modelDirPaths("OSError: /data/exp1-trial2-pid9x/y and /home/me/exp1-trial2/z"))
      .toBe("OSError: /data/exp1-trial2-pid9x/y and /home/me/exp1-trial2/z");
  });

  it("applies to the cause and the exit line the failure box shows", () => {
    const lines = [
      "Traceback (most recent call last):",
      '  File "/tmp/det-workdirs/exp4-trial7-pid100/model_def.py", line 9, in build_training_data_loader',
      "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/det-workdirs/exp4-trial7-pid100/train.csv'",
      "[determined] Trial failed (exit code 1); no restarts left (0 of 0 restarts used)",
    ];
    expect(failureSummary(lines).cause).toBe("FileNotFoundError: [Errno 2] No such file or directory: 'train.csv'");
  });
});

describe("cluster page", () => {
  it("links a slot to the trial or the task using it", async () => {
    routes["GET /api/v1/ui/cluster"] = () => [200, { slots: 4, used_slots: 3, utilization: 3 / 4, agents: [{
      id: "embedded", slots: 4, used_slots: 3, label: "", enabled: true, type: "embedded", address: "", last_seen_seconds_ago: 0,
      slot_tasks: [
        { slot_id: 0, task: "trial-5", trial_id: 5, experiment_id: 3 },
        { slot_id: 1, task: "task-ab12cd34", trial_id: null, experiment_id: null, task_id: "ab12cd34", task_kind: "notebook" },
        { slot_id: 2, task: null, trial_id: null, experiment_id: null, task_id: null, task_kind: null },
        { slot_id: 3, task: "task-ef56", trial_id: null, experiment_id: null, task_id: "ef56", task_kind: null }, // just ended
      ] }] }];
    open("/cluster");
    const slots = await screen.findAllByTestId("slot");
    expect(within(slots[0]).getByRole("link", { name: "trial 5" }).getAttribute("href")).toBe("/experiments/3/trials/5");
    expect(within(slots[1]).getByRole("link", { name: "notebook ab12cd34" }).getAttribute("href")).toBe("/tasks?logs=ab12cd34");
    expect(within(slots[2]).queryByRole("link")).toBeNull();
    expect(within(slots[3]).getByRole("link", { name: "task ef56" }).getAttribute("href")).toBe("/tasks?logs=ef56");
    expect(taskPath("a b")).toBe("/tasks?logs=a%20b");
    // The master's own slots: named once (the heading read "embedded embedded").
    expect(screen.getByTestId("agent").querySelector("h2")!.textContent!.trim()).toBe("embedded");
  });
  it("names a remote agent's type, label, address and whether it is disabled", () => {
    const agent = { id: "box-1", type: "remote", label: "gpu", address: "10.0.0.2", enabled: false };
    expect(agentDetails(agent)).toBe("remote · label gpu · 10.0.0.2 · disabled");
    expect(agentDetails({ ...agent, label: "", address: "", enabled: true })).toBe("remote");
  });
});

const TRIAL: Trial = {
  id: 7, experiment_id: 3, request_id: "r7", state: "COMPLETED", hparams: {}, seed: 1, restarts: 0,
  total_batches: 5000, best_validation: null, latest_checkpoint: null, start_time: "2026-11-01T10:00:00+00:00", end_time: null,
} as unknown as Trial;

describe("workloads table", () => {
  it("keeps the newest rows unless expanded", () => {
    const rows = Array.from({ length: 25 }, (_, i) => 25 - i);
    expect(shownWorkloads(rows, false)).toEqual(rows.slice(0, WORKLOADS_COLLAPSED));
    expect(shownWorkloads(rows, true)).toBe(rows);
    expect(shownWorkloads(rows.slice(0, 4), false)).toHaveLength(4);
  });

  it("shows the newest 10 of 50 workloads, then all with 'show all 50', so the logs stay near the top", async () => {
    const live = liveChannel();
    const workloads = Array.from({ length: 50 }, (_, i) => ({
      id: 100 - i, kind: "training", total_batches: 100 * (50 - i), end_time: "2026-11-01T10:00:00+00:00", metrics: { loss: 1 } }));
    routes["GET /api/v1/ui/trials/7/workloads"] = () => [200, {
      workloads, total: 50, trial: TRIAL, metric_names: { training: ["loss"], validation: [] }, last_metric_id: 100, last_log_id: 0 }];
    routes["GET /api/v1/trials/7/logs"] = () => [200, { logs: [] }];
    routes["GET /api/v1/ui/experiments/3"] = () => [200, { owner: "determined", metric: "validation_loss" }];
    routes["GET /api/v1/ui/trials/7/metrics"] = () => [200, { batches: [], values: [] }];
    routes["GET /api/v1/trials/7/gpu-metrics"] = () => [200, { gpu_metrics: [] }];
    routes["GET /api/v1/experiments/3/checkpoints"] = () => [200, { checkpoints: [] }];
    open("/experiments/3/trials/7");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    live.connect();
    const table = await screen.findByTestId("workloads-table");
    const batches = () => within(table).getAllByRole("row").slice(1).map((r) => r.querySelector("td")!.textContent);
    expect(batches()).toEqual(["5000", "4900", "4800", "4700", "4600", "4500", "4400", "4300", "4200", "4100"]);
    expect(screen.queryByTestId("workloads-pager")).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "show all 50" }));
    expect(batches()).toHaveLength(50);
    expect(within(screen.getByTestId("workloads-pager")).getByText("50 workloads")).toBeTruthy();
    fireEvent.click(screen.getByTestId("workloads-fewer"));
    expect(batches()).toHaveLength(10);
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
