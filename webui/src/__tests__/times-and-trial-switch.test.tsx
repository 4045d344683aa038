/** Web UI follow-ups: one way of showing times on every page (the wrappable table cell
 * reads as the one-line text does); the trial page's workloads paging starts over on another
 * trial. (That the trials table fits an 800-pixel window is layout:
 * tests/master/e2e/test_webui_asha_browser.py.) */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { act, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { MemoryRouter, useNavigate, type NavigateFunction } from "react-router";
import App from "../App";
import type { Trial } from "../api";
import { When } from "../components/Bits";
import { formatTime, timeParts } from "../format";
import { callsTo, installFakeMaster, liveChannel, removeFakeMaster, routes } from "./fake-master";

beforeEach(installFakeMaster);
afterEach(removeFakeMaster);

const SRC = resolve(__dirname, "..");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === "__tests__" ? [] : sources(path);
    return /\.tsx?$/.test(name) ? [path] : [];
  });
}

describe("times", () => {
  it("are formatted in format.ts alone: no other source formats a date", () => {
    // Dates shown to the user: toLocaleString() of a Date (numbers pass a locale: "en-US"),
    // toLocaleDateString/TimeString, Intl.DateTimeFormat, toDateString and the like.
    const dateFormatting = /toLocale(Date|Time)String|toLocaleString\(\s*\)|DateTimeFormat|to(UTC|GMT|Date|Time)String/;
    const files = sources(SRC);
    expect(files.length).toBeGreaterThan(20); // the walk found the sources
    const offenders = files.filter((f) => relative(SRC, f) !== "format.ts")
      .flatMap((f) => readFileSync(f, "utf8").split("\n").map((line, i) => [`${relative(SRC, f)}:${i + 1}`, line] as const))
      .filter(([, line]) => dateFormatting.test(line))
      .map(([where, line]) => `${where}: ${line.trim()}`);
    expect(offenders).toEqual([]);
  });

  it("read the same in a table's wrappable cell as on one line: date, comma, time", () => {
    const iso = "2026-11-29T06:34:08+00:00";
    const [date, time] = timeParts(iso)!;
    expect(formatTime(iso)).toBe(`${date}, ${time}`);
    expect(formatTime(iso)).toBe(new Date(iso).toLocaleString()); // en-US here: the browser's usual form
    const { container } = render(<When iso={iso} />);
    expect(container.textContent).toBe(formatTime(iso));
    expect(container.querySelectorAll(".when > span")).toHaveLength(2); // a narrow column breaks between them
    expect(formatTime(null)).toBe("");
    expect(formatTime("not a time")).toBe("");
    expect(render(<When iso="not a time" />).container.textContent).toBe("");
  });
});

const trial = (id: number): Trial => ({
  id, experiment_id: 3, request_id: `r${id}`, state: "COMPLETED", hparams: {}, seed: 1, restarts: 0,
  total_batches: 100 * 120, best_validation: null, latest_checkpoint: null,
  start_time: "2026-11-01T10:00:00+00:00", end_time: null,
} as unknown as Trial);

/** Trial ``id``'s 120 workloads, newest first, pages of the request's size. Batches tell the
 * trials apart: trial 7's are 100, 200, ...; trial 8's 101, 201, .... */
function serveTrial(id: number): void {
  const all = Array.from({ length: 120 }, (_, i) => ({
    id: 1000 * id + 120 - i, kind: "training", total_batches: 100 * (120 - i) + (id - 7),
    end_time: "2026-11-01T10:00:00+00:00", metrics: {} })); // no metrics: no chart (jsdom cannot draw one)
  routes[`GET /api/v1/ui/trials/${id}/workloads`] = (url) => {
    const offset = Number(url.searchParams.get("offset"));
    const limit = Number(url.searchParams.get("limit"));
    return [200, { workloads: all.slice(offset, offset + limit), total: 120, trial: trial(id),
      metric_names: { training: [], validation: [] }, last_metric_id: 1000 * id + 120, last_log_id: 0 }];
  };
  routes[`GET /api/v1/trials/${id}/logs`] = () => [200, { logs: [] }];
  routes[`GET /api/v1/ui/trials/${id}/metrics`] = () => [200, { batches: [], values: [] }];
  routes[`GET /api/v1/trials/${id}/gpu-metrics`] = () => [200, { gpu_metrics: [] }];
}

describe("the trial page, moving to another trial", () => {
  it("shows the new trial's newest workloads, collapsed, whichever page and toggle the last one had", async () => {
    const live = liveChannel();
    serveTrial(7);
    serveTrial(8);
    routes["GET /api/v1/ui/experiments/3"] = () => [200, { owner: "determined", metric: "validation_loss" }];
    routes["GET /api/v1/experiments/3/checkpoints"] = () => [200, { checkpoints: [] }];
    let navigate: NavigateFunction = () => {};
    function Navigator() {
      navigate = useNavigate();
      return null;
    }
    render(<MemoryRouter initialEntries={["/experiments/3/trials/7"]}><App /><Navigator /></MemoryRouter>);
    await waitFor(() => expect(live.queries).toHaveLength(1));
    live.connect();
    const rows = () => within(screen.getByTestId("workloads-table")).getAllByRole("row").slice(1)
      .map((r) => r.querySelector("td")!.textContent);
    await waitFor(() => expect(rows()[0]).toBe("12000"));
    expect(rows()).toHaveLength(10);
    fireEvent.click(screen.getByRole("button", { name: "show all 120" }));
    fireEvent.click(screen.getByRole("button", { name: "older ›" }));
    await waitFor(() => expect(rows()[0]).toBe("7000")); // trial 7's second page, all 50 rows
    expect(rows()).toHaveLength(50);

    const asked = callsTo("/api/v1/ui/trials/8/workloads").length;
    act(() => navigate("/experiments/3/trials/8"));
    await waitFor(() => expect(live.queries).toHaveLength(2));
    live.connect();
    await waitFor(() => expect(rows()[0]).toBe("12001")); // trial 8's newest, not its second page
    expect(rows()).toHaveLength(10); // collapsed again
    expect(screen.getByRole("button", { name: "show all 120" })).toBeTruthy();
    expect(screen.queryByTestId("workloads-pager")).toBeNull();
    const loads = callsTo("/api/v1/ui/trials/8/workloads").slice(asked);
    expect(loads.map((c) => c.url.searchParams.get("offset"))).toEqual(["0"]); // one load, of the newest page

    // Paging on the new trial works as before.
    fireEvent.click(screen.getByRole("button", { name: "show all 120" }));
    fireEvent.click(screen.getByRole("button", { name: "older ›" }));
    await waitFor(() => expect(rows()[0]).toBe("7001"));
  });
});
