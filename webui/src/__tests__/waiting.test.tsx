import { afterEach, describe, expect, it, vi } from "vitest";
import { act, cleanup, render, screen } from "@testing-library/react";
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

let send: (name: string, payload: unknown) => boolean = () => false;

function TaskNote({ id }: { id: string }) {
  const { waits, onEvent } = useWaits();
  send = onEvent;
  return <WaitingNote wait={waits.tasks[id]} />;
}

describe("useWaits", () => {
  it("shows what the live channel's waiting events say, without reading the API", () => {
    const fetch = vi.fn();
    vi.stubGlobal("fetch", fetch);
    const { container } = render(<TaskNote id="ab12" />);
    expect(container.textContent).toBe("");
    const answer: Waits = { tasks: { ab12: behind }, trials: {}, experiments: {} };
    act(() => void expect(send("waiting", answer)).toBe(true));
    expect(screen.getByTestId("waiting").textContent).toBe(behind.reason);
    // Other events are the page's; a reason that clears goes away.
    expect(send("tasks", { changed: [], removed: [] })).toBe(false);
    expect(screen.getByTestId("waiting").textContent).toBe(behind.reason);
    act(() => void send("waiting", { tasks: {}, trials: {}, experiments: {} }));
    expect(container.textContent).toBe("");
    expect(fetch).not.toHaveBeenCalled();
  });
});
