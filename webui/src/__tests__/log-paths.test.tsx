/** The trial's log view names files in the model directory as the failure box does (one
 * mapping, ``modelDirPaths``), for the lines the box reads; a task's log, and other lines,
 * stay as written. (The same in a real browser on a real trial's traceback:
 * tests/master/e2e/test_webui_browser.py.) */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import type { LogLine } from "../api";
import Logs from "../components/Logs";
import { failureSummary, logLinePaths, modelDirPaths } from "../failure";
import { callsTo, installFakeMaster, removeFakeMaster, routes } from "./fake-master";

beforeEach(installFakeMaster);
afterEach(removeFakeMaster);

// As common/scratch.py names it on Linux: pid, then start time and pid namespace in hex.
const WORKDIR = "/tmp/det-workdirs/exp4-trial7-pid3107.1f2a3.effffffc";
const TRACEBACK = [
  "[determined] Trial starts in " + WORKDIR,
  "Traceback (most recent call last):",
  `  File "/venv/lib/python3.12/site-packages/determined/harness/_run.py", line 40, in main`,
  `  File "${WORKDIR}/raise_def.py", line 9, in __init__`,
  `  | File "${WORKDIR}-of3100.2b.effffffc/sub/data.py", line 2, in load`,
  `ValueError: no rows in ${WORKDIR}/train.csv`,
  `trial 7 failed: ValueError: no rows in ${WORKDIR}/train.csv`,
];
const line = (id: number, text: string): LogLine => ({ id, timestamp: "2026-11-29T10:00:00+00:00", line: text });

// The same cases check the master's copy of this mapping (its log search):
// tests/master/api/test_log_view_lines.py.
const SHARED = resolve(dirname(fileURLToPath(import.meta.url)), "../../../tests/fixtures/log_view_lines.json");
const CASES: { raw: string; shown: string }[] = JSON.parse(readFileSync(SHARED, "utf8")).cases;

describe("logLinePaths", () => {
  it.each(CASES)("shows $raw as the master's search reads it", ({ raw, shown }) => {
    expect(logLinePaths(raw)).toBe(shown);
  });


  it("maps a traceback's frame and exception lines and the harness's failure line", () => {
    expect(TRACEBACK.map(logLinePaths)).toEqual([
      "[determined] Trial starts in " + WORKDIR, // says where the trial runs: as written
      "Traceback (most recent call last):",
      `  File "/venv/lib/python3.12/site-packages/determined/harness/_run.py", line 40, in main`,
      '  File "raise_def.py", line 9, in __init__',
      '  | File "sub/data.py", line 2, in load',
      "ValueError: no rows in train.csv",
      "trial 7 failed: ValueError: no rows in train.csv",
    ]);
  });

  it("maps each line of a text of several, and keeps a line's end", () => {
    expect(logLinePaths(`note ${WORKDIR}/a.py\n  File "${WORKDIR}/a.py", line 1\r\n`))
      .toBe(`note ${WORKDIR}/a.py\n  File "a.py", line 1\r\n`);
  });

  it("reads a cause as the failure box shows it", () => {
    const cause = failureSummary([...TRACEBACK.slice(0, 6), "[determined] Trial failed (exit code 1)"]).cause;
    expect(cause).toBe("ValueError: no rows in train.csv");
    expect(logLinePaths(TRACEBACK[5])).toBe(cause);
  });

  it("takes a process with its start time and namespace whole", () => {
    // The pattern stopped at the pid: 'the model directory.1f2a3.effffffc/raise_def.py'.
    expect(modelDirPaths(`${WORKDIR}/raise_def.py`)).toBe("raise_def.py");
    expect(modelDirPaths(`in ${WORKDIR}.`)).toBe("in the model directory.");
  });
});

describe("log view", () => {
  it("shows a trial's traceback with paths in the model directory", async () => {
    routes["GET /api/v1/trials/7/logs"] = () => [200, { logs: TRACEBACK.map((t, i) => line(i + 1, t)) }];
    render(<Logs trialId={7} live={[]} />);
    const log = screen.getByTestId("trial-logs");
    await waitFor(() => expect(log.querySelectorAll(".log-line")).toHaveLength(TRACEBACK.length));
    const shown = [...log.querySelectorAll(".log-line")].map((e) => e.textContent);
    expect(shown[3]).toBe('  File "raise_def.py", line 9, in __init__');
    expect(shown[5]).toBe("ValueError: no rows in train.csv");
    expect(shown[0]).toBe("[determined] Trial starts in " + WORKDIR);
    expect(log.textContent).not.toContain(`${WORKDIR}/raise_def.py`);
  });

  it("maps live lines too, and a task's log not at all", async () => {
    routes["GET /api/v1/trials/7/logs"] = () => [200, { logs: [] }];
    const { rerender } = render(<Logs trialId={7} live={[]} />);
    rerender(<Logs trialId={7} live={[line(1, TRACEBACK[3])]} />);
    await waitFor(() => expect(screen.getByTestId("trial-logs").textContent).toBe('  File "raise_def.py", line 9, in __init__'));
    removeFakeMaster();
    installFakeMaster();
    routes["GET /api/v1/tasks/a1/logs"] = () => [200, { logs: [line(1, TRACEBACK[3])] }];
    render(<Logs taskId="a1" live={[]} />);
    await waitFor(() => expect(screen.getByTestId("task-logs").textContent).toBe(TRACEBACK[3]));
  });

  it("searches the lines as it shows them, not the working directory it leaves out", async () => {
    routes["GET /api/v1/trials/7/logs"] = () => [200, { logs: TRACEBACK.map((t, i) => line(i + 1, t)) }];
    // The master's search (it matches shown lines too) has nothing older to add.
    routes["GET /api/v1/ui/trials/7/logs"] = () => [200, { logs: [] }];
    render(<Logs trialId={7} live={[]} />);
    const log = screen.getByTestId("trial-logs");
    await waitFor(() => expect(log.querySelectorAll(".log-line")).toHaveLength(TRACEBACK.length));
    const shownFor = async (search: string) => {
      fireEvent.change(screen.getByLabelText("search logs"), { target: { value: search } });
      await waitFor(() => expect(callsTo("/api/v1/ui/trials/7/logs").at(-1)?.url.searchParams.get("search")).toBe(search));
      return [...log.querySelectorAll(".log-line")].map((e) => e.textContent);
    };
    // As shown: the frame's path is relative to the model directory.
    expect(await shownFor('file "raise_def.py"')).toEqual(['  File "raise_def.py", line 9, in __init__']);
    expect(await shownFor("rows in train.csv")).toEqual(["ValueError: no rows in train.csv", "trial 7 failed: ValueError: no rows in train.csv"]);
    // The working directory shows only where the trial says it runs.
    expect(await shownFor("det-workdirs")).toEqual(["[determined] Trial starts in " + WORKDIR]);
  });
});
