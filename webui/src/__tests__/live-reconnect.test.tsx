/** The live pages across a dropped and reopened channel, against a fake master: a page
 * opens its channel first and loads once it connects (once, not twice), or without it when
 * the channel is slow or refused; each reconnection reloads what the page shows once, the
 * tails go on from the newest id the page has (no line or workload twice, none lost), an
 * event is not undone by an older answer, and a 4xx stops the retries while a 5xx does not. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import type { ExperimentRow, LogLine, MetricRow, Trial } from "../api";
import { reconnect } from "../events";
import { callsTo, deferred, installFakeMaster, liveChannel, open, removeFakeMaster, routes } from "./fake-master";

beforeEach(installFakeMaster);
afterEach(removeFakeMaster);

const experiment = (id: number, over: Partial<ExperimentRow> = {}): ExperimentRow => ({
  id, state: "ACTIVE", description: `exp ${id}`, labels: [], archived: false, progress: 0.5, owner: "determined",
  parent_id: null, start_time: "2026-11-01T10:00:00+00:00", end_time: null, duration: 60, searcher: "single",
  metric: "validation_loss", smaller_is_better: true, best_metric: null, num_trials: 1, ...over,
});

const listing = (rows: ExperimentRow[], total = rows.length) => ({ experiments: rows, total, owners: ["determined"], labels: [] });

/** Lets the page take what already arrived (answers, stream chunks, reconnect timers). */
const settle = () => new Promise((r) => setTimeout(r, 150));

describe("experiment list", () => {
  it("loads once when the channel connects, and once per reconnection: what changed while it was down shows", async () => {
    const live = liveChannel();
    let rows = [experiment(1)];
    routes["GET /api/v1/ui/experiments"] = () => [200, listing(rows)];
    const loads = () => callsTo("/api/v1/ui/experiments").length;
    open("/experiments");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    await settle();
    expect(loads()).toBe(0); // the channel first: a load now could miss a change
    expect(screen.queryByTestId("experiment-table-empty")).toBeNull(); // not "none" before it loaded
    live.connect();
    await screen.findByText("exp 1");
    await settle();
    expect(loads()).toBe(1);

    live.drop();
    rows = [experiment(2), experiment(1, { state: "COMPLETED" })];
    await waitFor(() => expect(live.queries).toHaveLength(2));
    await settle();
    expect(loads()).toBe(1); // reconnecting, not yet connected: nothing to reload from
    live.connect();
    await screen.findByText("exp 2");
    const row1 = screen.getByText("exp 1").closest("tr")!;
    expect(within(row1).getByText(/completed/i)).toBeTruthy();
    expect(loads()).toBe(2);

    // An event merges its rows; it reloads nothing.
    live.send("experiments", { changed: [experiment(1, { state: "COMPLETED", description: "renamed" })], removed: [] });
    await screen.findByText("renamed");
    await settle();
    expect(loads()).toBe(2);

    // A filter reloads through the same channel; a reconnection reloads with that filter.
    fireEvent.change(screen.getByLabelText("state"), { target: { value: "COMPLETED" } });
    await waitFor(() => expect(loads()).toBe(3));
    await settle();
    expect(live.queries).toHaveLength(2);
    live.drop();
    await waitFor(() => expect(live.queries).toHaveLength(3));
    live.connect();
    await waitFor(() => expect(loads()).toBe(4));
    expect(callsTo("/api/v1/ui/experiments").at(-1)!.url.searchParams.get("state")).toBe("COMPLETED");
  });

  it("keeps an event that arrives while a reload's answer, read before it, is on its way", async () => {
    const live = liveChannel();
    let held: ReturnType<typeof deferred> | null = null;
    routes["GET /api/v1/ui/experiments"] = () => (held ? held.reply : [200, listing([experiment(1)])]);
    open("/experiments");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    live.connect();
    await screen.findByText("exp 1");
    held = deferred();
    live.drop();
    await waitFor(() => expect(live.queries).toHaveLength(2));
    live.connect(); // the reload starts; its answer waits
    await waitFor(() => expect(callsTo("/api/v1/ui/experiments")).toHaveLength(2));
    live.send("experiments", { changed: [experiment(1, { description: "renamed" })], removed: [] });
    await screen.findByText("renamed");
    held.give([200, listing([experiment(1)], 7)]); // read before the rename
    await screen.findByText(/7 experiments/);
    expect(screen.getByText("renamed")).toBeTruthy();
    expect(screen.queryByText("exp 1")).toBeNull();
  });
});

const TRIAL: Trial = {
  id: 7, experiment_id: 3, request_id: "r7", state: "ACTIVE", hparams: { lr: 0.1 }, seed: 1, restarts: 0,
  total_batches: 100, best_validation: null, latest_checkpoint: null, start_time: "2026-11-01T10:00:00+00:00", end_time: null,
};
const line = (id: number): LogLine => ({ id, timestamp: "2026-11-01T10:00:00+00:00", line: `line ${id}` });
const metricRow = (id: number, batches: number): MetricRow => ({
  id, trial_id: 7, kind: "validation", total_batches: batches, end_time: 1_793_000_000 + id, metrics: { validation_loss: 1 / id },
});
const workload = (r: MetricRow) => ({ id: r.id, kind: r.kind, total_batches: r.total_batches, end_time: "2026-11-01T10:00:00+00:00", metrics: r.metrics });

describe("trial page", () => {
  it("goes on from the newest log line and metrics row across a reconnection: none twice, none lost", async () => {
    const live = liveChannel();
    let stored = [metricRow(10, 100)];
    routes["GET /api/v1/ui/trials/7/workloads"] = () => [200, {
      workloads: [...stored].reverse().map(workload), total: stored.length, trial: TRIAL,
      metric_names: { training: [], validation: [] }, last_metric_id: stored.at(-1)!.id, last_log_id: 3,
    }];
    routes["GET /api/v1/trials/7/logs"] = () => [200, { logs: [line(1), line(2), line(3)] }];
    routes["GET /api/v1/ui/experiments/3"] = () => [200, { owner: "determined", metric: "validation_loss" }];
    routes["GET /api/v1/trials/7/gpu-metrics"] = () => [200, { gpu_metrics: [] }];
    routes["GET /api/v1/experiments/3/checkpoints"] = () => [200, { checkpoints: [] }];
    const loads = () => callsTo("/api/v1/ui/trials/7/workloads").length;
    const count = (text: string) => within(screen.getByTestId("trial-logs")).queryAllByText(text).length;
    const workloadRows = () => within(screen.getByTestId("workloads-table")).getAllByRole("row").length - 1;
    open("/experiments/3/trials/7");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    // Nothing loaded yet: the tails start where the stream opens (the master's newest rows).
    expect(live.queries[0].has("logs_after")).toBe(false);
    expect(live.queries[0].has("metrics_after")).toBe(false);
    live.connect();
    await screen.findByText("line 3");
    expect(loads()).toBe(1);

    // Two polls' events read at once: both show.
    stored = [...stored, metricRow(11, 200)];
    live.sendTogether([["logs", [line(4)]], ["logs", [line(5)]], ["metrics", [metricRow(11, 200)]]]);
    await screen.findByText("line 5");
    expect(count("line 4")).toBe(1);
    await waitFor(() => expect(workloadRows()).toBe(2));
    expect(screen.getByText("2 workloads")).toBeTruthy();

    live.drop();
    await waitFor(() => expect(live.queries).toHaveLength(2));
    expect(live.queries[1].get("logs_after")).toBe("5");
    expect(live.queries[1].get("metrics_after")).toBe("11");
    stored = [...stored, metricRow(12, 300)];
    live.connect();
    live.sendTogether([["logs", [line(6)]], ["metrics", [metricRow(12, 300)]]]);
    await screen.findByText("line 6");
    await waitFor(() => expect(loads()).toBe(2));
    await settle();
    for (const id of [1, 2, 3, 4, 5, 6]) expect(count(`line ${id}`)).toBe(1);
    expect(workloadRows()).toBe(3);
    expect(screen.getByText("3 workloads")).toBeTruthy();
  });
});

describe("task list", () => {
  it("reloads the tasks at each (re)connection and follows the open task's log from its tail's newest line", async () => {
    const live = liveChannel();
    const task = (id: string, state: string) => ({
      id, kind: "command", owner: "determined", state, description: `task ${id}`, slots: 0, agent_id: null, slot_ids: [],
      exit_code: null, end_reason: null, start_time: "2026-11-01T10:00:00+00:00", end_time: null, url: null,
    });
    let tasks = [task("a1", "RUNNING")];
    routes["GET /api/v1/tasks"] = () => [200, { tasks }];
    routes["GET /api/v1/tasks/a1/logs"] = () => [200, { logs: [line(1)] }];
    const loads = () => callsTo("/api/v1/tasks").length;
    open("/tasks?logs=a1");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    expect(live.queries[0].get("task_logs_after")).toBe("1"); // after its tail, not from its first line
    live.connect();
    await screen.findByText("task a1");
    live.send("task_logs", [line(2)]);
    await screen.findByText("line 2");
    expect(loads()).toBe(1);

    live.drop();
    tasks = [task("a1", "TERMINATED")];
    await waitFor(() => expect(live.queries).toHaveLength(2));
    expect(live.queries[1].get("task_logs_after")).toBe("2");
    live.connect();
    await waitFor(() => expect(loads()).toBe(2));
    await screen.findByText(/terminated/i);
    expect(within(screen.getByTestId("task-logs")).getAllByText(/^line/).map((e) => e.textContent)).toEqual(["line 1", "line 2"]);
  });
});

describe("refusals", () => {
  it("a model deleted while the channel was down: the page says so and stops retrying", async () => {
    const live = liveChannel();
    routes["GET /api/v1/models/mnist/versions"] = () => [200, { model: {
      name: "mnist", description: "", metadata: {}, creation_time: "2026-11-01T10:00:00+00:00",
      last_updated_time: "2026-11-01T10:00:00+00:00", num_versions: 0,
    }, versions: [] }];
    open("/models/mnist");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    live.connect();
    await screen.findByTestId("no-versions");
    live.refuseNext(404, "Model mnist not found.");
    live.drop();
    expect((await screen.findByTestId("model-removed")).textContent).toBe("This model was deleted.");
    await settle(); // several reconnect delays
    expect(live.queries).toHaveLength(2);
  });

  it("5xx answers are retried (the experiment page then reloads); a 4xx shows the master's error and stops", async () => {
    const live = liveChannel();
    let state = "ACTIVE";
    routes["GET /api/v1/ui/experiments/5"] = () => [200, {
      ...experiment(5, { state }), config: {}, config_yaml: "", original_config_yaml: "", trials: [], metric_names: { training: [], validation: [] },
      last_metric_id: 7, last_log_id: 0,
    }];
    const loads = () => callsTo("/api/v1/ui/experiments/5").length;
    open("/experiments/5");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    expect(live.queries[0].has("metrics_after")).toBe(false); // from the stream's opening
    live.connect();
    await screen.findByText("exp 5");
    expect(loads()).toBe(1);
    live.refuseNext(500, "database is locked");
    live.refuseNext(503, "restarting");
    live.drop();
    state = "PAUSED"; // while the channel was down
    await waitFor(() => expect(live.queries).toHaveLength(4));
    expect(live.queries[3].get("metrics_after")).toBe("7"); // from the newest row the page has
    expect(screen.queryByRole("alert")).toBeNull();
    live.connect();
    await waitFor(() => expect(screen.getAllByTestId("state")[0].textContent).toBe("PAUSED"));
    expect(loads()).toBe(2);
    live.refuseNext(404, "Experiment 5 not found.");
    live.drop();
    expect((await screen.findByRole("alert")).textContent).toBe("Experiment 5 not found.");
    await settle();
    expect(live.queries).toHaveLength(5);
  });
});

describe("connection state", () => {
  it("the top bar says reconnecting… while the channel is down, until it connects again; a refusal is no outage", async () => {
    const live = liveChannel();
    routes["GET /api/v1/ui/experiments"] = () => [200, listing([experiment(1)])];
    const lost = () => screen.queryByTestId("connection-lost");
    open("/experiments");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    expect(lost()).toBeNull(); // connecting the first time: nothing to say yet
    live.connect();
    await screen.findByText("exp 1");
    expect(lost()).toBeNull();

    live.refuseNext(502, "bad gateway"); // the master is down: the proxy answers
    live.drop();
    expect((await screen.findByTestId("connection-lost")).textContent).toBe("reconnecting…");
    await waitFor(() => expect(live.queries).toHaveLength(3));
    expect(lost()).not.toBeNull(); // connected again, no bytes yet
    live.connect();
    await waitFor(() => expect(lost()).toBeNull());

    live.refuseNext(401, "Invalid or expired session token");
    live.drop();
    await waitFor(() => expect(live.queries).toHaveLength(4));
    await settle();
    expect(lost()).toBeNull();
  });
});

describe("loading with the channel", () => {
  const trialRoutes = () => {
    routes["GET /api/v1/ui/trials/7/workloads"] = () => [200, {
      workloads: [workload(metricRow(10, 100))], total: 1, trial: TRIAL,
      metric_names: { training: [], validation: ["validation_loss"] }, last_metric_id: 10, last_log_id: 3,
    }];
    routes["GET /api/v1/trials/7/logs"] = () => [200, { logs: [line(1), line(2), line(3)] }];
    routes["GET /api/v1/ui/experiments/3"] = () => [200, { owner: "determined", metric: "validation_loss" }];
    routes["GET /api/v1/trials/7/gpu-metrics"] = () => [200, { gpu_metrics: [] }];
    routes["GET /api/v1/experiments/3/checkpoints"] = () => [200, { checkpoints: [] }];
  };

  it("a slow channel: the page loads without it, then asks again with the tails of what it loaded", async () => {
    const live = liveChannel();
    trialRoutes();
    reconnect.fallbackMs = 100;
    const loads = () => callsTo("/api/v1/ui/trials/7/workloads").length;
    open("/experiments/3/trials/7");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    expect(live.queries[0].has("metrics_after")).toBe(false);
    await screen.findByText("line 3"); // loaded without the channel
    expect(loads()).toBe(1);
    // The waiting connection, asked for before the load, would start the tails at the
    // master's newest rows then, maybe after what the page loaded: it is asked for again.
    await waitFor(() => expect(live.queries).toHaveLength(2));
    expect(live.queries[1].get("metrics_after")).toBe("10");
    expect(live.queries[1].get("logs_after")).toBe("3");
    expect(screen.queryByTestId("connection-lost")).toBeNull(); // no outage
    live.connect();
    await waitFor(() => expect(loads()).toBe(2)); // for changes made before it connected
    live.send("logs", [line(4)]);
    await screen.findByText("line 4");
    await settle();
    expect(live.queries).toHaveLength(2);
    expect(loads()).toBe(2);
  });

  it("a refused channel: the page loads without it and shows the master's error", async () => {
    const live = liveChannel();
    live.refuseNext(404, "Experiment 9 not found.");
    routes["GET /api/v1/ui/experiments/9"] = () => [404, { error: "Experiment 9 not found." }];
    open("/experiments/9");
    expect((await screen.findByRole("alert")).textContent).toBe("Experiment 9 not found.");
    await settle();
    expect(callsTo("/api/v1/ui/experiments/9")).toHaveLength(1);
    expect(live.queries).toHaveLength(1); // a 4xx is not retried
  });

  it("a master down when the page opens: the page says so, and loads when the channel connects", async () => {
    const live = liveChannel();
    let up = false;
    routes["GET /api/v1/ui/experiments"] = () => (up ? [200, listing([experiment(1)])] : [502, { error: "bad gateway" }]);
    live.refuseNext(502, "bad gateway");
    live.refuseNext(502, "bad gateway");
    open("/experiments");
    expect((await screen.findByRole("alert")).textContent).toBe("bad gateway"); // loaded without it at once
    await screen.findByTestId("connection-lost");
    await waitFor(() => expect(live.queries).toHaveLength(3));
    up = true;
    live.connect();
    await screen.findByText("exp 1");
    expect(screen.queryByRole("alert")).toBeNull();
    expect(screen.queryByTestId("connection-lost")).toBeNull();
    expect(callsTo("/api/v1/ui/experiments")).toHaveLength(2);
  });
});

describe("trial page workloads", () => {
  /** The workloads route over ``stored`` (newest first, paginated as the master does). */
  const workloadsOf = (stored: () => MetricRow[]) => (offset: number, limit: number): [number, unknown] => [200, {
    workloads: [...stored()].reverse().slice(offset, offset + limit).map(workload), total: stored().length, trial: TRIAL,
    metric_names: { training: [], validation: ["validation_loss"] }, last_metric_id: Math.max(...stored().map((r) => r.id)), last_log_id: 0,
  }];
  const otherRoutes = () => {
    routes["GET /api/v1/trials/7/logs"] = () => [200, { logs: [] }];
    routes["GET /api/v1/ui/experiments/3"] = () => [200, { owner: "determined", metric: "validation_loss" }];
    routes["GET /api/v1/trials/7/gpu-metrics"] = () => [200, { gpu_metrics: [] }];
    routes["GET /api/v1/experiments/3/checkpoints"] = () => [200, { checkpoints: [] }];
  };
  const firstCells = () => within(screen.getByTestId("workloads-table")).getAllByRole("row").slice(1)
    .map((r) => within(r).getAllByRole("cell")[0].textContent);

  it("a live row arriving while another page loads goes to the newest page, not onto the rows shown meanwhile", async () => {
    const live = liveChannel();
    otherRoutes();
    const stored = Array.from({ length: 60 }, (_, i) => metricRow(i + 1, (i + 1) * 100));
    const answer = workloadsOf(() => stored);
    let held: ReturnType<typeof deferred> | null = null;
    routes["GET /api/v1/ui/trials/7/workloads"] = (url) => {
      const offset = Number(url.searchParams.get("offset"));
      return held && offset === 0 ? held.reply : answer(offset, Number(url.searchParams.get("limit")));
    };
    const loads = () => callsTo("/api/v1/ui/trials/7/workloads").length;
    open("/experiments/3/trials/7");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    live.connect();
    fireEvent.click(await screen.findByRole("button", { name: "show all 60" })); // the newest 10 until then
    await waitFor(() => expect(firstCells()).toHaveLength(50));
    fireEvent.click(screen.getByRole("button", { name: "older ›" }));
    await waitFor(() => expect(firstCells()).toHaveLength(10)); // the older page: batches 1000 to 100
    held = deferred();
    fireEvent.click(screen.getByRole("button", { name: "‹ newer" }));
    await waitFor(() => expect(loads()).toBe(3)); // the newest page again; its answer waits
    const row = metricRow(61, 6100);
    stored.push(row);
    live.send("metrics", [row]);
    await screen.findByText("61 workloads");
    expect(firstCells()).toEqual(["1000", "900", "800", "700", "600", "500", "400", "300", "200", "100"]);
    held.give(answer(0, 50)); // read before the row: the row is added to it
    await waitFor(() => expect(firstCells()[0]).toBe("6100"));
    expect(firstCells()).toHaveLength(50);
    expect(firstCells().filter((c) => c === "6100")).toHaveLength(1);
    expect(screen.getByText("61 workloads")).toBeTruthy();
  });

  it("a workload stored again (the trial went back to a checkpoint) takes its row's place, and the page reloads", async () => {
    const live = liveChannel();
    otherRoutes();
    let stored = [metricRow(1, 100), metricRow(2, 200), metricRow(3, 300)];
    const answer = workloadsOf(() => stored);
    routes["GET /api/v1/ui/trials/7/workloads"] = (url) => answer(Number(url.searchParams.get("offset")), 50);
    const loads = () => callsTo("/api/v1/ui/trials/7/workloads").length;
    open("/experiments/3/trials/7");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    live.connect();
    await waitFor(() => expect(firstCells()).toEqual(["300", "200", "100"]));
    // Back to the checkpoint at 100: the rows after it are deleted and stored again.
    stored = [metricRow(1, 100), metricRow(4, 200)];
    live.send("metrics", [metricRow(4, 200)]);
    await waitFor(() => expect(loads()).toBe(2));
    await waitFor(() => expect(firstCells()).toEqual(["200", "100"]));
    expect(screen.getByText("2 workloads")).toBeTruthy();
    stored = [...stored, metricRow(5, 300)];
    live.send("metrics", [metricRow(5, 300)]);
    await waitFor(() => expect(firstCells()).toEqual(["300", "200", "100"]));
    expect(screen.getByText("3 workloads")).toBeTruthy();
    await settle();
    expect(loads()).toBe(2); // a new workload is no reason to reload
  });
});

describe("the session", () => {
  it("a session that ended while the channel was down: the sign-in page says so, and leads back", async () => {
    const live = liveChannel();
    routes["GET /api/v1/ui/experiments"] = () => [200, listing([experiment(1)])];
    open("/experiments");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    live.connect();
    await screen.findByText("exp 1");
    routes["GET /api/v1/me"] = () => [401, { error: "Invalid or expired session token: log in again" }];
    live.refuseNext(401, "Invalid or expired session token: log in again");
    live.drop();
    expect((await screen.findByTestId("session-ended")).textContent).toContain("Your session has ended");
    routes["POST /api/v1/auth/login"] = () => [200, { token: "t2", user: { id: 2, username: "determined", admin: false, active: true } }];
    fireEvent.change(screen.getByRole("textbox"), { target: { value: "determined" } });
    fireEvent.click(screen.getByRole("button", { name: "Sign in" }));
    await waitFor(() => expect(live.queries).toHaveLength(3)); // back on the list: its channel
    live.connect();
    await screen.findByText("exp 1");
    expect(screen.queryByTestId("session-ended")).toBeNull();
  });
});
