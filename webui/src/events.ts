/** The master's live channel (GET /api/v1/ui/events, server-sent events).

Read with fetch rather than EventSource so the session token goes in the
Authorization header, as on every other request. Reconnects after network errors and
5xx answers; stops at a 4xx. */
import { authHeaders, responseError, type ApiError } from "./api";

export type EventHandler = (name: string, data: any) => void;

/** Parses a text/event-stream buffer; returns the complete events and the rest. */
export function parseEvents(buffer: string): { events: { name: string; data: string }[]; rest: string } {
  const events: { name: string; data: string }[] = [];
  const blocks = buffer.split("\n\n");
  const rest = blocks.pop() ?? "";
  for (const block of blocks) {
    let name = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (data.length) events.push({ name, data: data.join("\n") });
  }
  return { events, rest };
}

/** How long the channel waits before reconnecting (tests shorten it). */
export const reconnect = { delayMs: 2000 };

export interface ChannelOptions {
  /** Runs when a connection's first bytes arrive: the master has then read the state its
   * events change, so a page that reloads there misses no change made before. */
  onOpen?: () => void;
  /** Runs when the master refuses the channel with a 4xx (what the page follows was
   * deleted, the session ended, a bad query); the channel then stops. Network errors and
   * 5xx answers (and 408, 429) are retried instead. */
  onRefused?: (error: ApiError) => void;
}

/** The subscriptions whose channel is down (a connection failed or broke) and not yet
 * connected again; the top bar says "reconnecting…" while there is one. */
const down = new Set<object>();
const downListeners = new Set<() => void>();

function setDown(subscription: object, isDown: boolean): void {
  if (down.has(subscription) === isDown) return;
  if (isDown) down.add(subscription);
  else down.delete(subscription);
  downListeners.forEach((f) => f());
}

/** Whether some live channel is down and retrying; ``onChange`` runs when that changes. */
export const channelsDown = {
  get: (): boolean => down.size > 0,
  listen: (onChange: () => void): (() => void) => {
    downListeners.add(onChange);
    return () => void downListeners.delete(onChange);
  },
};

/** A 4xx the same request would get again. */
function refused(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 429;
}

/** Subscribe to the channel; ``params`` are its query (``experiments``, ``experiment_id``...).
 * ``params`` is called at each (re)connect so it can pass the newest ids seen. Returns
 * the function that ends the subscription. */
export function subscribe(
  params: () => Record<string, string | number | boolean>,
  onEvent: EventHandler,
  { onOpen, onRefused }: ChannelOptions = {},
): () => void {
  let stopped = false;
  let controller: AbortController | null = null;
  const self = {};
  const run = async () => {
    while (!stopped) {
      controller = new AbortController();
      try {
        const query = new URLSearchParams(Object.entries(params()).map(([k, v]) => [k, String(v)]));
        const response = await fetch(`/api/v1/ui/events?${query}`, {
          headers: authHeaders(),
          signal: controller.signal,
        });
        if (refused(response.status)) {
          setDown(self, false);
          const error = await responseError(response);
          if (!stopped) onRefused?.(error);
          return;
        }
        if (!response.ok || !response.body) throw new Error(`events: ${response.status}`);
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        let opened = false;
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          if (!opened) {
            opened = true;
            setDown(self, false);
            onOpen?.();
          }
          buffer += decoder.decode(value, { stream: true });
          const parsed = parseEvents(buffer);
          buffer = parsed.rest;
          for (const e of parsed.events) onEvent(e.name, JSON.parse(e.data));
        }
      } catch {
        if (stopped) return;
      }
      if (stopped) return;
      setDown(self, true);
      await new Promise((r) => setTimeout(r, reconnect.delayMs));
    }
  };
  void run();
  return () => {
    stopped = true;
    setDown(self, false);
    controller?.abort();
  };
}
