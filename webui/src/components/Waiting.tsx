/** Why things wait: the master's reasons for pending tasks, trials and experiments, pushed
 * on the live channel (``GET /waiting`` says the same, for the CLI and scripts). */
import { useCallback, useState } from "react";

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

/** Why things wait, as the live channel's ``waiting`` events last said (a page follows the
 * channel with ``waiting: true``; the master sends the reasons on connecting and then each
 * time one appears, changes or clears). ``onEvent`` takes every channel event and says
 * whether it was a ``waiting`` one. */
export function useWaits(): { waits: Waits; onEvent: (name: string, payload: unknown) => boolean } {
  const [waits, setWaits] = useState<Waits>(NO_WAITS);
  const onEvent = useCallback((name: string, payload: unknown) => {
    if (name !== "waiting") return false;
    setWaits(payload as Waits);
    return true;
  }, []);
  return { waits, onEvent };
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
