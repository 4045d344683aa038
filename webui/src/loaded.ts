/** State a page loads from the API and keeps current with the live channel's events. */
import { useCallback, useEffect, useRef, useState } from "react";

export interface Loaded<T> {
  data: T | null;
  error: unknown;
  /** (Re)loads; resolves with the answer when it was taken (changes applied), or null
   * when it failed or a newer load's answer is taken instead. */
  load: () => Promise<T | null>;
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
      if (request !== latest.current) return null;
      for (const change of pending.current) answer = change(answer);
      setData(answer);
      setError(null);
      return answer;
    } catch (e) {
      if (request === latest.current) setError(e);
      return null;
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

/** Runs ``load`` when ``key`` (a filter, a page number) changes after the first render: the
 * first load is the live channel's (``follow`` in events.ts). */
export function useLoadWhenChanged(load: () => unknown, key: unknown): void {
  const shown = useRef(key);
  useEffect(() => {
    if (Object.is(shown.current, key)) return;
    shown.current = key;
    void load();
  }, [key, load]);
}
