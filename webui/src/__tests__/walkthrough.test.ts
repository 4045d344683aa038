/** Items of a walkthrough of the web UI while experiments run: the trial chart's legend,
 * why a trial failed, the curve picker's notes, zooming the charts. */
import { describe, expect, it } from "vitest";
import { metricLabel, trialNote } from "../format";
import { failureSummary } from "../failure";
import { chartShape, legendValue, xScaleRange, type ChartSeries } from "../components/LineChart";
import { pageTitle } from "../title";

describe("metricLabel", () => {
  it("does not repeat the kind a metric's name already says", () => {
    expect(metricLabel("validation", "validation_error")).toBe("validation_error");
    expect(metricLabel("validation", "val_loss")).toBe("val_loss");
    expect(metricLabel("validation", "eval_loss")).toBe("eval_loss");
    expect(metricLabel("training", "train_acc")).toBe("train_acc");
  });
  it("names the kind where the name does not", () => {
    expect(metricLabel("validation", "accuracy")).toBe("validation accuracy");
    expect(metricLabel("training", "loss")).toBe("training loss");
    expect(metricLabel("training", "validation_loss")).toBe("training validation_loss");
  });
});

describe("failureSummary", () => {
  const restarted = [
    "[determined] Trial starts",
    "trial 1 failed: model_def.py: DigitsTrial.train_batch raised RuntimeError: first",
    "Traceback (most recent call last):",
    '  File "model_def.py", line 46, in train_batch',
    "RuntimeError: first",
    "[determined] Trial failed (exit code 65); restart 1 of 1 from abc at 92 batches",
    "[determined] Trial restarts (restart 1 of 1), restoring checkpoint abc at 92 batches",
    "trial 1 failed: model_def.py: DigitsTrial.train_batch raised RuntimeError: second",
    "Traceback (most recent call last):",
    '  File "model_def.py", line 46, in train_batch',
    "RuntimeError: second",
    "[determined] Trial failed (exit code 65); no restarts left (1 of 1 restarts used)",
  ];
  it("reads the harness's line and the master's exit line of the newest failure", () => {
    expect(failureSummary(restarted)).toEqual({
      cause: "model_def.py: DigitsTrial.train_batch raised RuntimeError: second",
      exit: "Trial failed (exit code 65); no restarts left (1 of 1 restarts used)",
    });
  });
  it("falls back on the traceback's last line, and not on an older failure's", () => {
    const lines = [
      "trial 3 failed: an older failure",
      "[determined] Trial failed (exit code 65); restart 1 of 5 from the beginning",
      "[determined] Trial starts",
      "Traceback (most recent call last):",
      '  File "harness.py", line 1, in main',
      "    raise ValueError('bad')",
      "ValueError: bad shape",
      "  more of the message",
      "2026-11-29 INFO trial 3 exits",
      "[determined] Trial failed (exit code 1); no restarts left (5 of 5 restarts used)",
    ];
    expect(failureSummary(lines).cause).toBe("ValueError: bad shape");
  });
  it("drops the cause from the exit line that names it (the master's lines since migration 0013)", () => {
    const lines = [
      "trial 3 failed: entrypoint 'model_def:NoSuchTrial': model_def has no NoSuchTrial",
      "[determined] Trial failed (exit code 65): trial 3 failed: entrypoint 'model_def:NoSuchTrial': "
        + "model_def has no NoSuchTrial; no restarts left (0 of 0 restarts used)",
    ];
    expect(failureSummary(lines)).toEqual({
      cause: "entrypoint 'model_def:NoSuchTrial': model_def has no NoSuchTrial",
      exit: "Trial failed (exit code 65); no restarts left (0 of 0 restarts used)",
    });
    const cut = [
      "trial 3 failed: model_def has no attribute 'X' (defined: A, B, C)",
      "[determined] Trial failed (exit code 65): trial 3 failed: model_def has no attribute 'X' (defined: A, …; "
        + "no restarts left (0 of 0 restarts used)",
    ];
    expect(failureSummary(cut).exit).toBe("Trial failed (exit code 65); no restarts left (0 of 0 restarts used)");
    const other = ["ValueError: x", "[determined] Trial failed (exit code 1): something else; no restarts left"];
    expect(failureSummary(["Traceback (most recent call last):", ...other]).exit)
      .toBe("Trial failed (exit code 1): something else; no restarts left");
  });
  it("says nothing it cannot find", () => {
    expect(failureSummary(["[determined] Trial starts", "hello"])).toEqual({ cause: null, exit: null });
    expect(failureSummary(["[determined] Trial failed (killed by signal 9); no restarts left"]))
      .toEqual({ cause: null, exit: "Trial failed (killed by signal 9); no restarts left" });
  });
});

describe("trialNote", () => {
  it("says stopped early only where the state does not say why", () => {
    expect(trialNote("COMPLETED", true)).toBe("COMPLETED · stopped early");
    expect(trialNote("ERROR", true)).toBe("ERROR");
    expect(trialNote("CANCELED", true)).toBe("CANCELED");
    expect(trialNote("ACTIVE", false)).toBe("ACTIVE");
  });
});

describe("chart zoom and live data", () => {
  it("fits the data when uPlot autoscales, and keeps a range dragged inside it", () => {
    expect(xScaleRange(0, 100, 0, 100)).toEqual([-4, 104]);
    expect(xScaleRange(null, null, 0, 100)).toEqual([-4, 104]);
    expect(xScaleRange(20, 40, 0, 100)).toEqual([20, 40]); // the zoom used to be ignored
    expect(xScaleRange(-10, 200, 0, 100)).toEqual([-4, 104]);
  });
  it("keeps the chart for new values, builds it anew for other series or axes", () => {
    const s = (ys: number[]): ChartSeries[] => [{ label: "trial 1", xs: ys.map((_, i) => i), ys, color: "red" }];
    const shape = chartShape(s([1, 2]), "batches", "loss", false, 320, "all");
    expect(chartShape(s([1, 2, 3]), "batches", "loss", false, 320, "all")).toBe(shape);
    expect(chartShape(s([1, 2]), "time", "loss", false, 320, "all")).not.toBe(shape);
    expect(chartShape([...s([1]), { label: "trial 2", xs: [0], ys: [1], color: "blue" }], "batches", "loss", false, 320, "all")).not.toBe(shape);
  });
});

describe("pageTitle", () => {
  it("names the page and, where known, the state, before the product", () => {
    expect(pageTitle("Experiment 3", "ACTIVE")).toBe("Experiment 3 · ACTIVE · Determined");
    expect(pageTitle("Experiment 3", undefined)).toBe("Experiment 3 · Determined");
    expect(pageTitle()).toBe("Determined");
  });
});

describe("legendValue", () => {
  it("shows small values to 4 significant digits (uPlot's default read 0.0004 as 0)", () => {
    expect(legendValue(0.0004123, true)).toBe("4.123e-4");
    expect(legendValue(0.05312500149, true)).toBe("0.05313");
    expect(legendValue(1234.5, true)).toBe("1235");
    expect(legendValue(null, true)).toBe("");
    expect(legendValue(0.5, false)).toBe("--");
  });
});
