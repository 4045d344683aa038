/** Issue 20's web UI items: markers, stopped trials, x range, default metric, confirm
 * dialogs, progress of failed experiments, signed-out task hints, hyperparameter views. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import { fitRange, progressLabel, stoppedTrials } from "../format";
import { markerIndices } from "../components/LineChart";
import { defaultMetricKey } from "../pages/TrialPage";
import { ConfirmButton, Progress } from "../components/Bits";
import { axisTicks, buildAxes, contourGrid, inBrushes, type HpPoint } from "../components/HparamViews";
import { FailedTrials, logHparamNames } from "../pages/ExperimentPage";
import { CurveLegend } from "../components/Curves";

afterEach(cleanup);

describe("curves", () => {
  it("marks every validation, or only the last point of long training curves", () => {
    expect(markerIndices([null, 0.5, null], "all")).toEqual([1]); // a one-validation trial
    expect(markerIndices([1, 2, null, 3, null], "all")).toEqual([0, 1, 3]);
    expect(markerIndices([1, 2, null, 3, null], "last")).toEqual([3]);
    expect(markerIndices([null, null], "last")).toEqual([]);
  });
  it("calls trials stopped when they ended short of the longest, failed or were canceled", () => {
    const trials = [
      { id: 1, state: "COMPLETED", total_batches: 100 },
      { id: 2, state: "COMPLETED", total_batches: 10 },
      { id: 3, state: "ACTIVE", total_batches: 10 },
      { id: 4, state: "ERROR", total_batches: 100 },
      { id: 5, state: "CANCELED", total_batches: 30 },
    ];
    expect([...stoppedTrials(trials)].sort()).toEqual([2, 4, 5]);
  });
  it("fits the x range to the data, with a window around a single x", () => {
    expect(fitRange(40, 40)).toEqual([36, 44]);
    expect(fitRange(0, 0)).toEqual([-1, 1]);
    const [lo, hi] = fitRange(10, 110);
    expect(lo).toBeCloseTo(6);
    expect(hi).toBeCloseTo(114);
  });
  it("has a legend for stopped trials", () => {
    render(<CurveLegend />);
    expect(screen.getByTestId("curve-legend").textContent).toContain("stopped early");
  });
});

describe("trial page", () => {
  it("opens on the searcher's metric, not the first in the alphabet", () => {
    const options = ["validation:accuracy", "validation:validation_loss", "training:loss"];
    expect(defaultMetricKey(options, "validation_loss")).toBe("validation:validation_loss");
    expect(defaultMetricKey(options, "missing")).toBe("validation:accuracy");
    expect(defaultMetricKey([], "x")).toBeNull();
  });
});

describe("confirmation and progress", () => {
  it("asks before it acts, and does nothing when the user keeps it", () => {
    const act = vi.fn();
    render(<ConfirmButton label="kill" question="Kill it?" confirmLabel="yes, kill it" onConfirm={act} />);
    fireEvent.click(screen.getByText("kill"));
    expect(act).not.toHaveBeenCalled();
    expect(screen.getByRole("dialog").textContent).toContain("Kill it?");
    fireEvent.click(screen.getByText("no, keep it"));
    expect(screen.queryByRole("dialog")).toBeNull();
    fireEvent.click(screen.getByText("kill"));
    fireEvent.click(screen.getByText("yes, kill it"));
    expect(act).toHaveBeenCalledTimes(1);
  });
  it("never shows an ERROR or CANCELED experiment as 100% done", () => {
    expect(progressLabel("ERROR", 1)).toBe("failed");
    expect(progressLabel("CANCELED", 1)).toBe("canceled");
    expect(progressLabel("COMPLETED", 1)).toBe("100%");
    expect(progressLabel("ACTIVE", 0.426)).toBe("43%");
    render(<Progress value={1} state="ERROR" />);
    expect(screen.getByTestId("progress").textContent).not.toContain("100%");
  });
});

describe("failed trials on the experiment page", () => {
  const trial = (id: number, state: string) => ({ id, experiment_id: 4, request_id: String(id), state, hparams: {}, seed: 1, restarts: 0, total_batches: 0, best_validation: null, latest_checkpoint: null, start_time: null, end_time: null });
  it("links each failed trial (its page says why), and shows nothing when none failed", () => {
    render(<MemoryRouter><dl><FailedTrials experimentId={4} trials={[trial(18, "COMPLETED"), trial(19, "ERROR"), trial(21, "ERROR")]} /></dl></MemoryRouter>);
    const cell = screen.getByTestId("failed-trials");
    expect(cell.textContent).toBe("trial 19, trial 21 · their pages say why");
    expect([...cell.querySelectorAll("a")].map((a) => a.getAttribute("href"))).toEqual(["/experiments/4/trials/19", "/experiments/4/trials/21"]);
    cleanup();
    render(<MemoryRouter><dl><FailedTrials experimentId={4} trials={[trial(18, "COMPLETED")]} /></dl></MemoryRouter>);
    expect(screen.queryByTestId("failed-trials")).toBeNull();
  });
});

describe("master logs", () => {
  it("shows each line's time as the other pages do (local, to the second), the exact one on hover", async () => {
    const ts = "2026-11-27T10:24:13.240955+00:00";
    vi.stubGlobal("fetch", vi.fn(async () => new Response(JSON.stringify(
      { logs: [{ id: 1, timestamp: ts, level: "INFO", line: "lifecycle: trial 3 COMPLETED" }] }), { status: 200 })));
    const { default: MasterLogs } = await import("../pages/MasterLogs");
    render(<MemoryRouter><MasterLogs /></MemoryRouter>);
    const line = await screen.findByText((_, el) => el?.className.startsWith("log-line") === true);
    const time = line.querySelector("span")!;
    expect(time.textContent).toBe(new Date(ts).toLocaleString());
    expect(time.getAttribute("title")).toBe(ts);
    expect(line.textContent).toContain("[INFO] lifecycle: trial 3 COMPLETED");
    vi.unstubAllGlobals();
  });
});

describe("tasks signed out", () => {
  it("shows a sign-in hint and no kill button", async () => {
    vi.stubGlobal("fetch", vi.fn(async (url: string) => new Response(JSON.stringify(
      url.includes("/tasks") ? { tasks: [{ id: "t1", kind: "notebook", owner: "a", state: "RUNNING", description: "", slots: 0, agent_id: null, slot_ids: null, exit_code: null, end_reason: null, start_time: "2026-01-01T00:00:00Z", end_time: null, url: "/proxy/t1/" }] } : {}),
      { status: 200 })));
    vi.stubGlobal("EventSource", class { close() {} addEventListener() {} });
    const { default: TaskList } = await import("../pages/TaskList");
    render(<MemoryRouter><TaskList /></MemoryRouter>);
    expect((await screen.findByTestId("signed-out-hint")).textContent).toContain("Sign in");
    await screen.findByText("t1");
    expect(screen.queryByTestId("kill-t1")).toBeNull();
    expect(screen.getByTestId("logs-t1")).toBeTruthy();
    vi.unstubAllGlobals();
  });
});

describe("hyperparameter views", () => {
  const axis = (min: number, max: number, log = false) => ({ name: "x", categorical: false, categories: [], log, min, max });
  it("puts ticks on every axis: round numbers, decades on log axes, every category", () => {
    expect(axisTicks(axis(0, 1)).map((t) => t.label)).toEqual(["0", "0.2", "0.4", "0.6", "0.8", "1"]);
    const log = axisTicks(axis(1e-4, 1e-1, true)).map((t) => t.label);
    expect(log).toEqual(["1e-4", "0.001", "0.01", "0.1"]);
    const logTicks = axisTicks(axis(1e-4, 1e-1, true));
    expect(logTicks[1].pos).toBeCloseTo(1 / 3); // evenly spaced decades: a log axis
    const cat = buildAxes([{ trialId: 1, hparams: { o: "sgd" }, metric: 1 }, { trialId: 2, hparams: { o: "adam" }, metric: 2 }], ["o"], new Set());
    expect(axisTicks(cat[0]).map((t) => t.label)).toEqual(["adam", "sgd"]);
    expect(axisTicks(axis(3, 3)).length).toBe(1);
  });
  it("reads log hyperparameters from the config, nested ones too", () => {
    const space = { lr: { type: "log", minval: -4, maxval: -1, base: 10 }, n: { type: "int", minval: 1, maxval: 4 }, c: 3, opt: { m: { type: "log", minval: -2, maxval: 0 } } };
    expect([...logHparamNames(space)].sort()).toEqual(["lr", "opt.m"]);
  });
  it("keeps only the lines inside every brush", () => {
    const pts: HpPoint[] = [1, 2, 3, 4].map((i) => ({ trialId: i, hparams: { a: i }, metric: i * 10 }));
    const axes = [...buildAxes(pts, ["a"], new Set()), { name: "m", categorical: false, categories: [], log: false, min: 10, max: 40 }];
    expect(pts.filter((p) => inBrushes(p, axes, { a: [0, 0.5] })).map((p) => p.trialId)).toEqual([1, 2]);
    expect(pts.filter((p) => inBrushes(p, axes, { a: [0, 0.5], m: [0.2, 1] })).map((p) => p.trialId)).toEqual([2]);
    expect(pts.filter((p) => inBrushes(p, axes, {})).length).toBe(4);
  });
  it("interpolates the contour from the trials and is exact at them", () => {
    const grid = contourGrid([{ x: 0.25, y: 0.25, v: 0 }, { x: 0.75, y: 0.75, v: 10 }], 2);
    expect(grid[0][0]).toBe(0);
    expect(grid[1][1]).toBe(10);
    expect(grid[0][1]).toBeCloseTo(5);
    expect(Math.min(...grid.flat())).toBeGreaterThanOrEqual(0);
  });
});
