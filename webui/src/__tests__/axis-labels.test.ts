/** A horizontal axis's tick labels (slice and contour plots) do not overlap: a slice plot
 * of a log hyperparameter from 0.00402 to 0.0646 wrote "0.05" into "0.0646". (The
 * hyperparameter views on a real search: tests/master/e2e/test_webui_asha_browser.py.) */
import { describe, expect, it } from "vitest";
import { axisTicks, spacedTicks, type Axis } from "../components/HparamViews";

const axis = (min: number, max: number, log = false): Axis => ({ name: "lr", categorical: false, categories: [], min, max, log });
const labels = (ticks: { label: string }[]) => ticks.map((t) => t.label);

describe("spacedTicks", () => {
  it("drops a round tick whose label would touch the end's (a slice plot's 0.05 and 0.0646)", () => {
    const ticks = axisTicks(axis(0.00402, 0.0646, true));
    expect(labels(ticks)).toEqual(["0.00402", "0.01", "0.02", "0.05", "0.0646"]);
    expect(labels(spacedTicks(ticks, 200))).toEqual(["0.00402", "0.01", "0.02", "0.0646"]);
    // A longer axis has room for them all.
    expect(spacedTicks(ticks, 600)).toEqual(ticks);
  });

  it("keeps the ends and the first of two interior ticks that would overlap", () => {
    const t = (pos: number, label: string) => ({ pos, label });
    const ticks = [t(0, "0"), t(0.3, "0.3"), t(0.35, "0.35"), t(0.7, "0.7"), t(1, "1")];
    expect(labels(spacedTicks(ticks, 100))).toEqual(["0", "0.3", "0.7", "1"]);
    expect(labels(spacedTicks(ticks, 10))).toEqual(["0", "1"]); // no room: the ends alone
  });
});
