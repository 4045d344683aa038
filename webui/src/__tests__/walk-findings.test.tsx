/** What a walk through every page at 1280 and 800 pixels found: parallel-coordinates axis
 * titles of many long hyperparameters ran into each other, category names ran into the axis
 * before theirs or off a slice plot's edge, a trial's hyperparameters showed all seventeen
 * digits ("0.011244503053070964") where every other table shows four, and round numbers in
 * exponent form kept their zeros ("1.000e-4"). (The layout in a browser:
 * tests/master/e2e/test_webui_browser.py.) */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { render, screen, waitFor, within } from "@testing-library/react";
import type { Trial } from "../api";
import { formatNumber } from "../format";
import { axisTitleLayout, fitText, ParallelCoordinates, SlicePlots, TITLE_CHAR_PX, type HpPoint } from "../components/HparamViews";
import { installFakeMaster, liveChannel, open, removeFakeMaster, routes } from "./fake-master";

describe("formatNumber", () => {
  it("drops an exponent form's trailing zeros, keeps its significant digits", () => {
    expect(formatNumber(1e-4)).toBe("1e-4");
    expect(formatNumber(0.000015)).toBe("1.5e-5");
    expect(formatNumber(5.0248740164608e-6)).toBe("5.025e-6");
    expect(formatNumber(2e7 + 0.5)).toBe("2e+7");
    expect(formatNumber(1e-4, 3)).toBe("1e-4");
    expect(formatNumber(0.011244503053070964)).toBe("0.01124");
  });
});

describe("fitText", () => {
  it("keeps a label that fits and cuts one that does not, with an ellipsis", () => {
    expect(fitText("dropout", 70, 7)).toBe("dropout");
    expect(fitText("gradient_clipping_max_norm", 70, 7)).toBe("gradient_…");
    expect(fitText("lr", 1, 7)).toBe("l…"); // at least the first character
  });
});

const LONG = ["dropout", "gradient_clipping_max_norm", "hidden_layer_width_multiplier", "label_smoothing_epsilon",
  "learning_rate_warmup_schedule", "lr (log)", "nested.encoder.depth", "num_hidden_layers",
  "optimizer_momentum_coefficient", "weight_decay_regularization (log)", "validation_loss"];

/** Pairs of titles on one row whose estimated boxes overlap or leave the chart. */
function clashes(titles: string[], xs: number[], width: number) {
  const layout = axisTitleLayout(titles, xs, width);
  const boxes = titles.map((t, i) => {
    const w = fitText(t, layout.maxPx[i], TITLE_CHAR_PX).length * TITLE_CHAR_PX;
    return { row: layout.row[i], lo: layout.x[i] - w / 2, hi: layout.x[i] + w / 2 };
  });
  const out: string[] = [];
  boxes.forEach((b, i) => {
    if (b.lo < 0 || b.hi > width) out.push(`${titles[i]} leaves the chart`);
    boxes.forEach((c, j) => {
      if (j > i && b.row === c.row && b.hi > c.lo && c.hi > b.lo) out.push(`${titles[i]} / ${titles[j]}`);
    });
  });
  return { layout, out };
}

describe("axisTitleLayout", () => {
  const xs = (n: number, spacing: number) => Array.from({ length: n }, (_, i) => 50 + i * spacing);

  it("keeps short titles whole on one row", () => {
    const { layout, out } = clashes(["lr", "dropout", "loss"], xs(3, 150), 420);
    expect(layout.rows).toBe(1);
    expect(layout.row).toEqual([0, 0, 0]);
    expect(layout.x).toEqual([50, 200, 350]);
    expect(out).toEqual([]);
  });

  it("puts many long titles on two rows, cut to their room, none overlapping (93 pixels an axis at 1280)", () => {
    const { layout, out } = clashes(LONG, xs(LONG.length, 93), 50 + 10 * 93 + 70);
    expect(layout.rows).toBe(2);
    expect(layout.row.slice(0, 4)).toEqual([0, 1, 0, 1]);
    expect(out).toEqual([]);
    // Each title gets the room its neighbours on its row leave: about two axes' spacing.
    expect(Math.min(...layout.maxPx.slice(1, -1))).toBeGreaterThanOrEqual(2 * 93 - 10);
  });

  it("never overlaps on a narrow window either (80 pixels an axis)", () => {
    expect(clashes(LONG, xs(LONG.length, 80), 50 + 10 * 80 + 70).out).toEqual([]);
  });
});

const NAMES = LONG.slice(0, -1).map((t) => t.replace(" (log)", ""));
const points: HpPoint[] = [0, 1, 2].map((i) => ({
  trialId: i + 1,
  metric: 0.5 + i / 10,
  hparams: Object.fromEntries(NAMES.map((n) => [n, n === "learning_rate_warmup_schedule"
    ? ["linear-warmup-then-cosine-decay", "constant-after-linear-warmup", "none"][i] : 0.1 + i / 10])),
}));

describe("the parallel-coordinates chart", () => {
  afterEach(() => {
    vi.unstubAllGlobals();
    vi.restoreAllMocks();
  });

  it("cuts the titles and category names that do not fit, whole on hover (in a 1,000-pixel box)", () => {
    vi.stubGlobal("ResizeObserver", class { observe() {} disconnect() {} });
    vi.spyOn(HTMLElement.prototype, "clientWidth", "get").mockReturnValue(1000);
    render(<ParallelCoordinates points={points} names={NAMES} logNames={new Set()} metricName="validation_loss" smallerIsBetter />);
    const svg = screen.getByTestId("parallel-coordinates");
    const cut = [...svg.querySelectorAll("text.axis-title[data-full]")];
    expect(cut.map((t) => t.getAttribute("data-full"))).toContain("hidden_layer_width_multiplier");
    for (const t of cut) expect(t.querySelector("title")!.textContent).toBe(t.getAttribute("data-full"));
    // The titles take two rows.
    expect(new Set([...svg.querySelectorAll("text.axis-title")].map((t) => t.getAttribute("y")))).toEqual(new Set(["16", "30"]));
    const schedule = svg.querySelector("g[data-axis=learning_rate_warmup_schedule]")!;
    const names = [...schedule.querySelectorAll("text.tick")];
    expect(names.map((t) => t.getAttribute("data-full"))).toEqual(["constant-after-linear-warmup", "linear-warmup-then-cosine-decay", null]);
    expect(names.map((t) => t.lastChild!.textContent!.endsWith("…"))).toEqual([true, true, false]);
    expect(names[2].textContent).toBe("none");
  });
});

describe("a slice plot of categories", () => {
  it("keeps each category name inside the plot, cut to its share of the axis", () => {
    render(<SlicePlots points={points} names={["learning_rate_warmup_schedule"]} logNames={new Set()} metricName="loss" smallerIsBetter />);
    const svg = screen.getByTestId("slice-plots").querySelector("svg")!;
    const width = Number(svg.getAttribute("width"));
    const bottom = Math.max(...[...svg.querySelectorAll("text.tick")].map((t) => Number(t.getAttribute("y"))));
    const ticks = [...svg.querySelectorAll("text.tick")].filter((t) => Number(t.getAttribute("y")) === bottom);
    expect(ticks.map((t) => t.getAttribute("data-full"))).toEqual(["constant-after-linear-warmup", "linear-warmup-then-cosine-decay", null]);
    for (const t of ticks) {
      const half = (t.lastChild!.textContent!.length * 6.2) / 2;
      const x = Number(t.getAttribute("x"));
      expect(x - half).toBeGreaterThanOrEqual(0);
      expect(x + half).toBeLessThanOrEqual(width);
    }
  });

  it("keeps two long category names apart (each had half the axis and both ran into the middle)", () => {
    const two = points.slice(0, 2);
    render(<SlicePlots points={two} names={["learning_rate_warmup_schedule"]} logNames={new Set()} metricName="loss" smallerIsBetter />);
    const svg = screen.getByTestId("slice-plots").querySelector("svg")!;
    const bottom = Math.max(...[...svg.querySelectorAll("text.tick")].map((t) => Number(t.getAttribute("y"))));
    const [left, right] = [...svg.querySelectorAll("text.tick")].filter((t) => Number(t.getAttribute("y")) === bottom)
      .map((t) => ({ x: Number(t.getAttribute("x")), half: (t.lastChild!.textContent!.length * 6.2) / 2 }));
    expect(left.x - left.half).toBeGreaterThanOrEqual(0);
    expect(left.x + left.half).toBeLessThan(right.x - right.half);
    expect(right.x + right.half).toBeLessThanOrEqual(Number(svg.getAttribute("width")));
  });
});

describe("a trial's hyperparameters", () => {
  beforeEach(installFakeMaster);
  afterEach(removeFakeMaster);

  it("show four significant digits as the other tables do, the exact value on hover", async () => {
    const trial = { id: 4, experiment_id: 3, request_id: "r4", state: "COMPLETED", seed: 1, restarts: 0, total_batches: 1,
      hparams: { lr: 0.011244503053070964, global_batch_size: 16, decay: 5.0248740164608e-6, opt: "sgd" },
      best_validation: null, latest_checkpoint: null, start_time: "2026-11-01T10:00:00+00:00", end_time: null } as unknown as Trial;
    routes["GET /api/v1/ui/experiments/3"] = () => [200, {
      id: 3, state: "COMPLETED", description: "e", labels: [], archived: false, progress: 1, owner: "determined",
      parent_id: null, start_time: "2026-11-01T10:00:00+00:00", end_time: null, duration: 1, searcher: "single",
      metric: "loss", smaller_is_better: true, best_metric: null, num_trials: 1, config: {}, config_yaml: "", original_config_yaml: "",
      trials: [trial], metric_names: { training: [], validation: [] }, last_metric_id: 0, last_log_id: 0, step_unit: "batch",
    }];
    routes["GET /api/v1/ui/trials/4/workloads"] = () => [200, { workloads: [], total: 0, trial,
      metric_names: { training: [], validation: [] }, last_metric_id: 0, last_log_id: 0 }];
    routes["GET /api/v1/trials/4/logs"] = () => [200, { logs: [] }];
    routes["GET /api/v1/ui/trials/4/metrics"] = () => [200, { batches: [], values: [] }];
    routes["GET /api/v1/trials/4/gpu-metrics"] = () => [200, { gpu_metrics: [] }];
    routes["GET /api/v1/experiments/3/checkpoints"] = () => [200, { checkpoints: [] }];
    const live = liveChannel();
    open("/experiments/3/trials/4");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    live.connect();
    const table = await screen.findByTestId("hparams");
    const value = (name: string) => within(table).getByText(name).closest("tr")!.querySelectorAll("td")[1];
    expect(value("lr").textContent).toBe("0.01124");
    expect(value("lr").querySelector("[title]")!.getAttribute("title")).toBe("0.011244503053070964");
    expect(value("decay").textContent).toBe("5.025e-6");
    expect(value("global_batch_size").textContent).toBe("16");
    expect(value("global_batch_size").querySelector("[title]")).toBeNull();
    expect(value("opt").textContent).toBe("sgd");
    await screen.findByText("No checkpoints."); // the page's last loads, answered
  });
});
