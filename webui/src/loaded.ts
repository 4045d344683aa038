/** State a page loads from the API and keeps current with the live channel's events. */
import { useCallback, useRef, useState } from "react";

export interface Loaded<T> {
  data: T | null;
  error: unknown;
  /** (Re)loads; resolves true when this load's answer was taken (not a newer one's). */
  load: () => Promise<boolean>;
  /** Applies an event's change now, and again to the answer of a load in flight: that
   * load may have read the master before the change, and would otherwise undo it. */
  update: (change: (data: T) => T) => void;
}

/** ``fetcher``'s answer, reloaded by ``load`` (the newest load wins), changed by
 * ``update``. The error of the latest load, cleared by the next success. */
export function useLoaded<T>(fetcher: () => Promise<T>): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const latest = useRef(0);
  const loading = useRef(false);
  // Changes received since the latest load started; it applies them to its answer.
  const pending = useRef<((data: T) => T)[]>([]);

  const load = useCallback(async () => {
    const request = ++latest.current;
    loading.current = true;
    pending.current = [];
    try {
      let answer: T = await fetcher();
      if (request !== latest.current) return false;
      for (const change of pending.current) answer = change(answer);
      setData(answer);
      setError(null);
      return true;
    } catch (e) {
      if (request === latest.current) setError(e);
      return false;
    } finally {
      if (request === latest.current) {
        loading.current = false;
        pending.current = [];
      }
    }
  }, [fetcher]);

  const update = useCallback((change: (data: T) => T) => {
    if (loading.current) pending.current.push(change);
    setData((d) => (d == null ? d : change(d)));
  }, []);

  return { data, error, load, update };
}
