import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cleanup, render, screen, waitFor } from "@testing-library/react";
import { applyTaskEvent, openUrl } from "../pages/TaskList";
import Logs from "../components/Logs";
import type { TaskRow } from "../api";
import { callsTo, installFakeMaster, liveChannel, open, removeFakeMaster, routes } from "./fake-master";

afterEach(cleanup);

const row = (over: Partial<TaskRow>): TaskRow => ({
  id: "a1", kind: "notebook", owner: "determined", state: "RUNNING", description: "", slots: 1,
  agent_id: "box-1", slot_ids: [0], exit_code: null, end_reason: null,
  start_time: "2026-01-01T00:00:00", end_time: null, url: "/proxy/a1/", ...over,
});

describe("openUrl", () => {
  it("opens running notebooks and TensorBoards through the proxy with the login", () => {
    expect(openUrl(row({}), "t&k")).toBe("/proxy/a1/lab?det_token=t%26k");
    expect(openUrl(row({ kind: "tensorboard" }), "tok")).toBe("/proxy/a1/?det_token=tok");
  });
  it("opens nothing for commands, shells, ended tasks or without a login", () => {
    expect(openUrl(row({ kind: "command", url: null }), "tok")).toBeNull();
    expect(openUrl(row({ kind: "shell" }), "tok")).toBeNull();
    expect(openUrl(row({ state: "TERMINATED" }), "tok")).toBeNull();
    expect(openUrl(row({}), null)).toBeNull();
  });
});

describe("applyTaskEvent", () => {
  it("replaces changed rows, adds new ones, drops removed ones, newest first", () => {
    const rows = [row({ id: "old", start_time: "2026-01-01T00:00:00" }), row({ id: "gone", start_time: "2026-01-01T00:00:01" })];
    const out = applyTaskEvent(rows, {
      changed: [row({ id: "old", state: "TERMINATED", start_time: "2026-01-01T00:00:00" }), row({ id: "new", start_time: "2026-01-02T00:00:00" })],
      removed: ["gone"],
    });
    expect(out.map((t) => [t.id, t.state])).toEqual([["new", "RUNNING"], ["old", "TERMINATED"]]);
  });
});

describe("task logs", () => {
  beforeEach(installFakeMaster);
  afterEach(removeFakeMaster);

  it("renders a task's lines as text, the tail's and the live ones", async () => {
    routes["GET /api/v1/tasks/a1/logs"] = () => [200, { logs: [{ id: 1, timestamp: "", line: "<u>started</u>" }] }];
    const live = [{ id: 2, timestamp: "", line: "<img src=x onerror=alert(1)> done" }];
    const { container } = render(<Logs taskId="a1" live={live} />);
    await screen.findByText("<u>started</u>");
    expect(container.querySelector("img, u")).toBeNull();
    expect(screen.getByTestId("task-logs").textContent).toBe("<u>started</u><img src=x onerror=alert(1)> done");
    expect(callsTo("/api/v1/tasks/a1/logs")[0].url.searchParams.get("tail")).toBe("1000");
  });
});

describe("the task list's waiting notes", () => {
  beforeEach(installFakeMaster);
  afterEach(removeFakeMaster);
  const behind = { reason: "waiting for 1 slot in use", detail: "held by task a1", impossible: false };

  it("come from the live channel's waiting events, without reading /waiting", async () => {
    const live = liveChannel();
    routes["GET /api/v1/tasks"] = () => [200, { tasks: [row({}), row({ id: "b2", state: "PENDING", agent_id: null, slot_ids: [] })] }];
    open("/tasks");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    expect(live.queries[0].get("waiting")).toBe("true");
    live.connect();
    await screen.findByText("b2");
    live.send("waiting", { tasks: { b2: behind }, trials: {}, experiments: {} });
    expect((await screen.findByTestId("waiting")).textContent).toBe(behind.reason);
    live.send("waiting", { tasks: {}, trials: {}, experiments: {} });
    await waitFor(() => expect(screen.queryByTestId("waiting")).toBeNull());
    expect(callsTo("/api/v1/waiting")).toHaveLength(0);
  });
});

describe("the task list without tasks", () => {
  beforeEach(installFakeMaster);
  afterEach(removeFakeMaster);

  it("says there are none, not a table of headers alone", async () => {
    routes["GET /api/v1/tasks"] = () => [200, { tasks: [] }];
    open("/tasks");
    const empty = await screen.findByTestId("task-table-empty");
    expect(empty.textContent).toContain("No tasks yet");
  });
});

describe("the experiment list without experiments", () => {
  beforeEach(installFakeMaster);
  afterEach(removeFakeMaster);
  const empty = { experiments: [], total: 0, owners: [], labels: [] };

  it("says there are none and how to create one, or that none match the filters", async () => {
    const live = liveChannel();
    routes["GET /api/v1/ui/experiments"] = () => [200, empty];
    open("/experiments");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    live.connect();
    expect((await screen.findByTestId("experiment-table-empty")).textContent)
      .toContain("det experiment create CONFIG MODEL_DIR");
    cleanup();
    const live2 = liveChannel();
    open("/experiments?state=COMPLETED");
    await waitFor(() => expect(live2.queries).toHaveLength(1));
    live2.connect();
    expect((await screen.findByTestId("experiment-table-empty")).textContent)
      .toBe("No experiments match these filters.");
  });
});
