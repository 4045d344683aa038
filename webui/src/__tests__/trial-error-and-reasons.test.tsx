/** What a user watching experiments reads without hovering: a failed trial's stored error
 * (the cause once, the traceback a click away; the log's text for a trial without one),
 * why a TensorBoard button is disabled, and what an importance estimate waits for. (The
 * same pages in a real browser: tests/master/e2e/test_webui_browser.py and
 * test_webui_asha_browser.py.) */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { render, screen, waitFor, within } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import type { Trial } from "../api";
import { ImportanceBars } from "../components/HparamViews";
import TaskLauncher from "../components/TaskLauncher";
import { exitLine, failureSummary, trialError } from "../failure";
import { callsTo, installFakeMaster, liveChannel, open, removeFakeMaster, routes } from "./fake-master";

beforeEach(installFakeMaster);
afterEach(removeFakeMaster);

const TRACEBACK_ERROR = [
  "Trial failed (exit code 1): Traceback (most recent call last):",
  '  File "/venv/lib/python3.12/site-packages/determined/harness/_run.py", line 40, in main',
  '  File "raise_def.py", line 9, in __init__',
  "ValueError: no rows in train.csv",
].join("\n");
const CAUSE = "ValueError: no rows in train.csv";
// The master's line as the trial's last process failed (its reason: the error's last line).
const EXIT = `[determined] Trial failed (exit code 1): ${CAUSE}; no restarts left (0 of 0 restarts used)`;

describe("trialError", () => {
  it("reads a traceback's cause, the error's head and the traceback", () => {
    expect(trialError(TRACEBACK_ERROR)).toEqual({
      cause: CAUSE, head: "Trial failed (exit code 1)", detail: TRACEBACK_ERROR.replace(/^Trial failed \(exit code 1\): /, "") });
  });

  it("reads the harness's line, a rank's traceback and a process's last lines", () => {
    expect(trialError("Trial failed (exit code 65): trial 3 failed: loader broke").cause).toBe("loader broke");
    const rank = trialError("Trial failed (exit code 1): its rank 1 failed first:\nTraceback (most recent call last):\n  File \"a.py\", line 1\nKeyError: 'x'");
    expect(rank.cause).toBe("KeyError: 'x'");
    expect(rank.detail).toContain("its rank 1 failed first:");
    const tail = trialError("Trial failed (exit code 2): its last output:\nloading data\nno GPU found");
    expect(tail).toEqual({ cause: "no GPU found", head: "Trial failed (exit code 2)", detail: "loading data\nno GPU found" });
  });

  it("quotes no detail that would only repeat the cause", () => {
    expect(trialError("Trial failed (exit code 65): its last output:\nentrypoint 'model_def:NoSuchTrial': no such attribute"))
      .toEqual({ cause: "entrypoint 'model_def:NoSuchTrial': no such attribute", head: "Trial failed (exit code 65)", detail: null });
    expect(trialError("Trial failed (exit code 65): trial 3 failed: loader broke"))
      .toEqual({ cause: "loader broke", head: "Trial failed (exit code 65)", detail: null });
  });

  it("has no cause when the error names only how the process ended, and no detail for one line", () => {
    expect(trialError("Trial failed (signal 9)")).toEqual({ cause: null, head: "Trial failed (signal 9)", detail: null });
    expect(trialError("Trial failed (exit code 1): the script was killed by signal 9"))
      .toEqual({ cause: "the script was killed by signal 9", head: "Trial failed (exit code 1)", detail: null });
  });

  it("names the model directory's files, not the trial's working copy", () => {
    const error = "Trial failed (exit code 1): Traceback (most recent call last):\n"
      + '  File "/tmp/det-workdirs/exp4-trial7-pid3107/raise_def.py", line 9\n'
      + "OSError: cannot read /tmp/det-workdirs/exp4-trial7-pid3107/train.csv";
    const read = trialError(error);
    expect(read.cause).toBe("OSError: cannot read train.csv");
    expect(read.detail).toContain('File "raise_def.py"');
  });
});

describe("exitLine", () => {
  it("words what followed a failure as the master's log line does", () => {
    expect(exitLine("Trial failed (exit code 1)", "ERROR", 1, 1)).toBe("Trial failed (exit code 1); no restarts left (1 of 1 restarts used)");
    expect(exitLine("Trial failed (signal 9)", "ERROR", 0, 5)).toBe("Trial failed (signal 9); experiment stopping (0 of 5 restarts used)");
    expect(exitLine("Trial failed (exit code 1)", "ACTIVE", 1, 5)).toBe("Trial failed (exit code 1)");
    expect(exitLine("Trial failed (exit code 1)", "ERROR", 1, undefined)).toBe("Trial failed (exit code 1)");
  });
});

describe("failureSummary given the error's cause", () => {
  it("keeps the log's exit line without that cause", () => {
    const lines = ["step 1", "something else went wrong first?", EXIT];
    expect(failureSummary(lines, CAUSE)).toEqual({
      cause: CAUSE, exit: "Trial failed (exit code 1); no restarts left (0 of 0 restarts used)" });
  });
});

const trial = (changes: Partial<Trial>): Trial => ({
  id: 7, experiment_id: 3, request_id: "r7", state: "ERROR", hparams: {}, seed: 1, restarts: 0,
  total_batches: 0, best_validation: null, latest_checkpoint: null,
  start_time: "2026-11-01T10:00:00+00:00", end_time: "2026-11-01T10:01:00+00:00", ...changes,
});

function serveTrial(t: Trial, log: string[], maxRestarts: number | null = 0): void {
  routes["GET /api/v1/ui/trials/7/workloads"] = () => [200, { workloads: [], total: 0, trial: t,
    metric_names: { training: [], validation: [] }, last_metric_id: 0, last_log_id: log.length }];
  routes["GET /api/v1/trials/7/logs"] = () => [200, { logs: log.map((line, i) => ({ id: i + 1, timestamp: "2026-11-01T10:00:00+00:00", line })) }];
  routes["GET /api/v1/ui/experiments/3"] = () => [200, { owner: "determined", metric: "validation_loss",
    ...(maxRestarts != null && { config: { max_restarts: maxRestarts } }) }];
  routes["GET /api/v1/experiments/3/checkpoints"] = () => [200, { checkpoints: [] }];
  routes["GET /api/v1/trials/7/gpu-metrics"] = () => [200, { gpu_metrics: [] }];
}

/** Trial 7's page, its live channel connected (the page then loads). */
async function openTrial(): Promise<void> {
  const live = liveChannel();
  open("/experiments/3/trials/7");
  await waitFor(() => expect(live.queries).toHaveLength(1));
  live.connect();
}

/** The failure box's text a reader sees: without the closed traceback. */
function visibleText(box: HTMLElement): string {
  const copy = box.cloneNode(true) as HTMLElement;
  copy.querySelectorAll("details pre").forEach((p) => p.remove());
  return copy.textContent ?? "";
}

describe("the trial page's failure box", () => {
  it("shows the trial's error: its cause once, the traceback a click away, what followed from stored data, not the log", async () => {
    // The log's exit line says otherwise: the box does not read it.
    serveTrial(trial({ error: TRACEBACK_ERROR, restarts: 2 }), ["Traceback (most recent call last):", "OSError: an older failure in the log",
      EXIT.replace("0 of 0", "9 of 9")], 2);
    await openTrial();
    const box = await screen.findByTestId("trial-failure");
    expect(box.querySelector(".why")!.textContent).toBe(CAUSE);
    await waitFor(() => expect(box.textContent).toContain("no restarts left"));
    const seen = visibleText(box);
    expect(seen.split(CAUSE)).toHaveLength(2); // once
    expect(seen).toContain("Trial failed (exit code 1); no restarts left (2 of 2 restarts used)");
    expect(seen).not.toContain("older failure");
    expect(seen).not.toContain("9 of 9");
    await waitFor(() => expect(callsTo("/api/v1/trials/7/logs").map((c) => c.url.searchParams.get("tail"))).toEqual(["1000"]));
    const details = within(box).getByTestId("trial-error") as HTMLDetailsElement;
    expect(details.open).toBe(false);
    expect(details.querySelector("summary")!.textContent).toBe("traceback");
    expect(details.querySelector("pre")!.textContent).toContain('File "raise_def.py", line 9');
  });

  it("reads the log for a trial without an error (from before the master stored it)", async () => {
    serveTrial(trial({ error: null }), ["Traceback (most recent call last):", '  File "a.py", line 1', "KeyError: 'lr'", EXIT.replace(CAUSE, "KeyError: 'lr'")]);
    await openTrial();
    const box = await screen.findByTestId("trial-failure");
    await waitFor(() => expect(box.querySelector(".why")?.textContent).toBe("KeyError: 'lr'"));
    expect(within(box).queryByTestId("trial-error")).toBeNull();
    expect(box.textContent).toContain("Trial failed (exit code 1); no restarts left");
  });

  it("says a trial killed with restarts left stopped with the experiment", async () => {
    serveTrial(trial({ error: TRACEBACK_ERROR, restarts: 1 }), [], 3);
    await openTrial();
    const box = await screen.findByTestId("trial-failure");
    await waitFor(() => expect(visibleText(box)).toContain("Trial failed (exit code 1); experiment stopping (1 of 3 restarts used)"));
  });

  it("says only the error's head without the experiment's max_restarts", async () => {
    serveTrial(trial({ error: TRACEBACK_ERROR }), [], null);
    await openTrial();
    const unknown = await screen.findByTestId("trial-failure");
    await waitFor(() => expect(callsTo("/api/v1/ui/experiments/3")).toHaveLength(1));
    expect(visibleText(unknown)).toContain("Trial failed (exit code 1)");
    expect(visibleText(unknown)).not.toContain("restarts");
  });

  it("names a restarted trial's last failure from its error, without reading the log", async () => {
    serveTrial(trial({ state: "ACTIVE", restarts: 1, end_time: null, error: TRACEBACK_ERROR }), []);
    await openTrial();
    const hint = await screen.findByTestId("trial-failure");
    expect(hint.querySelector(".why")!.textContent).toBe(CAUSE);
    expect(hint.textContent).toContain("Restarted after 1 failure; the last: " + CAUSE);
    // The log view reads its tail (1000 lines); the box does not read one of its own (400).
    await waitFor(() => expect(callsTo("/api/v1/trials/7/logs").map((c) => c.url.searchParams.get("tail"))).toEqual(["1000"]));
  });
});

describe("a disabled TensorBoard button", () => {
  it("says why beside it, and to screen readers", () => {
    render(<MemoryRouter><TaskLauncher label="open TensorBoard" testId="tensorboard" request={{ kind: "tensorboard" }}
      disabled reason="sign in to start a TensorBoard" /></MemoryRouter>);
    const button = screen.getByRole("button", { name: "open TensorBoard" });
    expect(button).toHaveProperty("disabled", true);
    expect(button.getAttribute("title")).toBeNull();
    const reason = screen.getByTestId("tensorboard-reason");
    expect(reason.textContent).toBe("sign in to start a TensorBoard");
    expect(button.getAttribute("aria-describedby")).toBe(reason.id);
    expect(button.getAttribute("aria-describedby")).toBeTruthy();
  });

  it("says nothing once enabled", () => {
    render(<MemoryRouter><TaskLauncher label="open TensorBoard" testId="tensorboard" request={{ kind: "tensorboard" }}
      reason="select trials in the table first" /></MemoryRouter>);
    expect(screen.queryByTestId("tensorboard-reason")).toBeNull();
    expect(screen.getByRole("button", { name: "open TensorBoard" }).getAttribute("aria-describedby")).toBeNull();
  });
});

describe("importance without an estimate", () => {
  it("says how many trials with the metric it needs and how many there are", () => {
    render(<ImportanceBars trials={1} metricName="validation_loss" rows={[]} />);
    expect(screen.getByTestId("importance-empty").textContent)
      .toBe("No estimate yet: it needs at least 3 trials that reported validation_loss, and 1 has.");
  });
});
