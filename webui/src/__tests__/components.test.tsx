import { afterEach, describe, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { installFakeMaster, removeFakeMaster, routes } from "./fake-master";
import Table from "../components/Table";
import { Labels } from "../components/Bits";
import Logs from "../components/Logs";

afterEach(cleanup);

describe("Table", () => {
  it("sorts by a clicked column, and reverses on a second click", () => {
    const rows = [{ id: 1, name: "b", n: 10 }, { id: 2, name: "a", n: 9 }, { id: 3, name: "c", n: 100 }];
    render(<Table columns={[{ key: "name", title: "Name", value: (r) => r.name }, { key: "n", title: "N", value: (r) => r.n }]} rows={rows} rowKey={(r) => r.id} />);
    const firstCells = () => screen.getAllByRole("row").slice(1).map((r) => r.querySelector("td")!.textContent);
    expect(firstCells()).toEqual(["b", "a", "c"]);
    fireEvent.click(screen.getByText("N"));
    expect(firstCells()).toEqual(["a", "b", "c"]);
    fireEvent.click(screen.getByText("N ▲"));
    expect(firstCells()).toEqual(["c", "b", "a"]);
  });
});

describe("user text is text", () => {
  it("renders a <script> label as its characters", () => {
    const { container } = render(<Labels labels={["<script>window.__pwned=1</script>", "<img src=x onerror=alert(1)>"]} />);
    expect(container.querySelector("script")).toBeNull();
    expect(container.querySelector("img")).toBeNull();
    expect(container.textContent).toContain("<script>window.__pwned=1</script>");
    expect((window as any).__pwned).toBeUndefined();
  });
  it("renders log lines as text, the tail's and the live ones", async () => {
    installFakeMaster();
    try {
      routes["GET /api/v1/trials/1/logs"] = () => [200, { logs: [{ id: 1, timestamp: "", line: "<i>tail</i>" }] }];
      const live = [{ id: 2, timestamp: "", line: "<b>bold</b> & <script>x()</script>" }];
      const { container } = render(<Logs trialId={1} live={live} />);
      await screen.findByText("<i>tail</i>"); // the tail merged with the live line
      expect(container.querySelector("b, i, script")).toBeNull();
      expect(screen.getByTestId("trial-logs").textContent).toBe("<i>tail</i><b>bold</b> & <script>x()</script>");
    } finally {
      removeFakeMaster();
    }
  });
});
