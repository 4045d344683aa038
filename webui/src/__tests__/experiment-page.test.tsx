import { afterEach, describe, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { MetricPicker } from "../pages/ExperimentPage";

afterEach(cleanup);

describe("MetricPicker", () => {
  it("shows a disabled placeholder before any metric is reported (it was an empty dropdown)", () => {
    render(<MetricPicker options={[]} value={null} onChange={() => {}} />);
    const select = screen.getByLabelText("metric") as HTMLSelectElement;
    expect(select.disabled).toBe(true);
    expect([...select.options].map((o) => o.textContent)).toEqual(["no metrics yet"]);
  });
  it("lists the metrics and reports the one chosen", () => {
    const chosen: string[] = [];
    render(<MetricPicker options={["validation:loss", "training:loss"]} value="validation:loss" onChange={(k) => chosen.push(k)} />);
    const select = screen.getByLabelText("metric") as HTMLSelectElement;
    expect(select.disabled).toBe(false);
    expect([...select.options].map((o) => o.textContent)).toEqual(["validation: loss", "training: loss"]);
    fireEvent.change(select, { target: { value: "training:loss" } });
    expect(chosen).toEqual(["training:loss"]);
  });
});
