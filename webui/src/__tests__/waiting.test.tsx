import { afterEach, describe, expect, it, vi } from "vitest";
import { cleanup, render, screen, waitFor } from "@testing-library/react";
import { useWaits, WaitingNote, type Waits } from "../components/Waiting";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const tooLarge = { reason: "needs 8 slots, cluster has 1", detail: "The task needs 8 slots on one agent; at most 1 usable slot(s) are there.", impossible: true };
const behind = { reason: "waiting for 1 slot in use", detail: "The task needs 1 slot on one agent; 0 free; held by task ab12 (1 slot, weight 1).", impossible: false };

describe("WaitingNote", () => {
  it("shows the short reason with the detail on hover, marked when impossible", () => {
    render(<WaitingNote wait={tooLarge} />);
    const note = screen.getByTestId("waiting");
    expect(note.textContent).toBe("needs 8 slots, cluster has 1");
    expect(note.getAttribute("title")).toBe(tooLarge.detail);
    expect(note.className).toBe("waiting impossible");
  });
  it("shows the detail in full where asked, and nothing without a reason", () => {
    const { container } = render(<><WaitingNote wait={behind} full /><WaitingNote wait={null} /></>);
    expect(screen.getByTestId("waiting").textContent).toBe(`Waiting: ${behind.detail}`);
    expect(screen.getByTestId("waiting").className).toBe("waiting");
    expect(container.querySelectorAll("[data-testid=waiting]")).toHaveLength(1);
  });
});

function TaskNote({ active, id }: { active: boolean; id: string }) {
  const waits = useWaits(active);
  return <WaitingNote wait={waits.tasks[id]} />;
}

describe("useWaits", () => {
  it("reads the master's reasons while active", async () => {
    const answer: Waits = { tasks: { ab12: behind }, trials: {}, experiments: {} };
    const fetch = vi.fn(async () => new Response(JSON.stringify(answer), { status: 200 }));
    vi.stubGlobal("fetch", fetch);
    render(<TaskNote active id="ab12" />);
    await waitFor(() => expect(screen.getByTestId("waiting").textContent).toBe(behind.reason));
    expect(String((fetch.mock.calls[0] as unknown[])[0])).toBe("/api/v1/waiting");
  });
  it("reads nothing while nothing on the page can wait", async () => {
    const fetch = vi.fn();
    vi.stubGlobal("fetch", fetch);
    const { container } = render(<TaskNote active={false} id="ab12" />);
    await new Promise((r) => setTimeout(r, 20));
    expect(fetch).not.toHaveBeenCalled();
    expect(container.textContent).toBe("");
  });
});
