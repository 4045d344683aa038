/** Why things wait: the master's reasons (``GET /waiting``) for pending tasks, trials and
 * experiments, polled while a page shows something that may wait. */
import { useEffect, useState } from "react";
import { api } from "../api";

export interface Wait {
  reason: string;
  detail: string;
  impossible: boolean;
}

export interface Waits {
  tasks: Record<string, Wait>;
  trials: Record<string, Wait>;
  experiments: Record<string, Wait>;
}

export const NO_WAITS: Waits = { tasks: {}, trials: {}, experiments: {} };
/** How often the reasons are read again (the master decides once a second). */
export const WAIT_POLL_MS = 2000;

/** The master's reasons, read every WAIT_POLL_MS while ``active`` (none otherwise). A
 * failed read keeps the last answer: the page shows connection errors itself. */
export function useWaits(active: boolean): Waits {
  const [waits, setWaits] = useState<Waits>(NO_WAITS);
  useEffect(() => {
    if (!active) {
      setWaits(NO_WAITS);
      return;
    }
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const answer = await api<Waits>("/waiting");
        if (!stopped) setWaits(answer);
      } catch {
        // keep the last reasons
      }
      if (!stopped) timer = setTimeout(poll, WAIT_POLL_MS);
    };
    void poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [active]);
  return waits;
}

/** Why an item waits: its short reason (the detail on hover), or the detail with ``full``. */
export function WaitingNote({ wait, full = false }: { wait?: Wait | null; full?: boolean }) {
  if (!wait) return null;
  return (
    <span className={`waiting${wait.impossible ? " impossible" : ""}`} title={wait.detail}
      data-testid="waiting">
      {full ? `Waiting: ${wait.detail}` : wait.reason}
    </span>
  );
}
