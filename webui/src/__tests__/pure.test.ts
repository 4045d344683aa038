import { describe, expect, it } from "vitest";
import { alignSeries } from "../components/align";
import { appendRows, xValues } from "../components/Curves";
import { parseEvents } from "../events";
import { compareValues, counted, flattenHparams, formatDuration, smooth } from "../format";
import { filterLines, merge } from "../components/Logs";
import { axisPosition, buildAxes } from "../components/HparamViews";

describe("alignSeries", () => {
  it("shares x values when every series has the same ones", () => {
    const [xs, a, b] = alignSeries([{ xs: [1, 2, 3], ys: [1, 2, 3] }, { xs: [1, 2, 3], ys: [4, 5, 6] }]);
    expect(xs).toEqual([1, 2, 3]);
    expect(a).toEqual([1, 2, 3]);
    expect(b).toEqual([4, 5, 6]);
  });
  it("takes the union and fills gaps with null", () => {
    const [xs, a, b] = alignSeries([{ xs: [1, 3], ys: [10, 30] }, { xs: [2, 3, 4], ys: [20, 31, 41] }]);
    expect(xs).toEqual([1, 2, 3, 4]);
    expect(a).toEqual([10, null, 30, null]);
    expect(b).toEqual([null, 20, 31, 41]);
  });
  it("snaps a huge union to a bounded number of columns", () => {
    const series = Array.from({ length: 20 }, (_, t) => ({
      xs: Array.from({ length: 1000 }, (_, i) => i + t / 100),
      ys: Array.from({ length: 1000 }, () => 1),
    }));
    const [xs] = alignSeries(series, 500);
    expect(xs.length).toBeLessThanOrEqual(500);
  });
});

describe("events", () => {
  it("parses complete events and keeps the rest", () => {
    const { events, rest } = parseEvents(": hi\n\nevent: logs\ndata: [1]\n\nevent: met");
    expect(events).toEqual([{ name: "logs", data: "[1]" }]);
    expect(rest).toBe("event: met");
  });
});

describe("curves", () => {
  const data = { metric: "loss", kind: "training" as const, series: [{ trial_id: 1, batches: [10], values: [1], time: [0], count: 1, records_per_batch: 4 }] };
  const trials: any[] = [{ id: 1, start_time: "2024-01-01T00:00:00Z", records_per_batch: 4 }, { id: 2, start_time: null }];
  it("appends new rows of the metric, adds new trials, ignores others and duplicates", () => {
    const out = appendRows(data, [
      { id: 5, trial_id: 1, kind: "training", total_batches: 20, end_time: 1704067210, metrics: { loss: 0.5 } },
      { id: 6, trial_id: 1, kind: "training", total_batches: 20, end_time: 1704067210, metrics: { loss: 0.4 } },
      { id: 7, trial_id: 1, kind: "validation", total_batches: 30, end_time: 1704067210, metrics: { loss: 9 } },
      { id: 8, trial_id: 2, kind: "training", total_batches: 10, end_time: 5, metrics: { loss: 2 } },
    ], trials);
    expect(out.series[0].batches).toEqual([10, 20]);
    expect(out.series[0].values).toEqual([1, 0.5]);
    expect(out.series[0].time[1]).toBe(10);
    expect(out.series[1].trial_id).toBe(2);
    expect(xValues(out.series[0], "records")).toEqual([40, 80]);
  });
});

describe("format", () => {
  it("flattens nested hyperparameters", () => {
    expect(flattenHparams({ a: 1, opt: { lr: 0.1, m: { b: "x" } } })).toEqual({ a: 1, "opt.lr": 0.1, "opt.m.b": "x" });
  });
  it("smooths with a debiased moving average", () => {
    expect(smooth([1, 1, 1], 0.9)).toEqual([1, 1, 1].map(() => expect.closeTo(1, 10)));
    expect(smooth([1, null, 3], 0)).toEqual([1, null, 3]);
  });
  it("sorts numbers numerically and empties last", () => {
    expect([10, null, 9, 100].sort(compareValues)).toEqual([9, 10, 100, null]);
    expect(formatDuration(3725)).toBe("1h 2m");
  });
  it("places values on log and categorical axes", () => {
    const axes = buildAxes([{ trialId: 1, hparams: { lr: 0.001, opt: "sgd" }, metric: 1 }, { trialId: 2, hparams: { lr: 0.1, opt: "adam" }, metric: 2 }], ["lr", "opt"], new Set(["lr"]));
    expect(axisPosition(axes[0], 0.01)).toBeCloseTo(0.5);
    expect(axisPosition(axes[1], "sgd")).toBe(1);
  });
});

describe("logs", () => {
  it("merges by id and filters case-insensitively", () => {
    const a = [{ id: 1, timestamp: "", line: "Alpha" }, { id: 2, timestamp: "", line: "beta" }];
    const b = [{ id: 2, timestamp: "", line: "beta" }, { id: 3, timestamp: "", line: "ALPHA 2" }];
    expect(merge(a, b).map((l) => l.id)).toEqual([1, 2, 3]);
    expect(filterLines(merge(a, b), "alpha").map((l) => l.id)).toEqual([1, 3]);
  });
});

describe("counted", () => {
  it("agrees with the number", () => {
    expect(counted(1, "batch")).toBe("1 batch");
    expect(counted(2, "batch")).toBe("2 batches");
    expect(counted(1, "trial")).toBe("1 trial");
    expect(counted(0, "trial")).toBe("0 trials");
    expect(counted(12000, "batch")).toBe("12,000 batches");
    expect(counted(2, "child", "children")).toBe("2 children");
  });
});
