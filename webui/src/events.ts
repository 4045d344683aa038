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

/** How long the channel waits before reconnecting, and how long a page waits for its
 * first connection before it loads without it (``follow``; tests change both). The wait
 * is for a stream held back on its way (a buffering proxy), not for a slow master: a
 * channel that opens after the page loaded without it makes the page load again. */
export const reconnect = { delayMs: 2000, fallbackMs: 5000 };

export type Params = () => Record<string, string | number | boolean>;

export interface ChannelOptions {
  /** Runs when a connection's first bytes arrive: the master has then read the state its
   * events change, so a page that reloads there misses no change made before. */
  onOpen?: () => void;
  /** Runs when the master refuses the channel with a 4xx (what the page follows was
   * deleted, the session ended, a bad query); the channel then stops. Network errors and
   * 5xx answers (and 408, 429) are retried instead. */
  onRefused?: (error: ApiError) => void;
  /** Runs when a connection fails or breaks; the channel retries after ``reconnect.delayMs``. */
  onDown?: () => void;
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

/** A running subscription: ``stop`` ends it; ``retryNow`` drops a connection that has
 * sent nothing yet and connects again at once. */
interface Channel {
  stop: () => void;
  retryNow: () => void;
}

/** Subscribes to the channel; ``params`` are its query (``experiments``, ``experiment_id``...),
 * read at each (re)connect so it can pass the newest ids seen. */
function connect(params: Params, onEvent: EventHandler, { onOpen, onRefused, onDown }: ChannelOptions): Channel {
  let stopped = false;
  let controller: AbortController | null = null;
  let waiting = false; // a connection is asked for and has sent nothing yet
  let retrying = false;
  const self = {};
  const run = async () => {
    while (!stopped) {
      controller = new AbortController();
      waiting = true;
      try {
        const query = new URLSearchParams(Object.entries(params()).map(([k, v]) => [k, String(v)]));
        const response = await fetch(`/api/v1/ui/events?${query}`, {
          headers: authHeaders(),
          signal: controller.signal,
        });
        if (refused(response.status)) {
          waiting = false;
          setDown(self, false);
          const error = await responseError(response);
          if (!stopped) onRefused?.(error);
          return;
        }
        if (!response.ok || !response.body) throw new Error(`events: ${response.status}`);
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          if (waiting) {
            waiting = false;
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
      waiting = false;
      if (stopped) return;
      if (retrying) {
        retrying = false;
        continue;
      }
      setDown(self, true);
      onDown?.();
      await new Promise((r) => setTimeout(r, reconnect.delayMs));
    }
  };
  void run();
  return {
    stop: () => {
      stopped = true;
      setDown(self, false);
      controller?.abort();
    },
    retryNow: () => {
      if (stopped || !waiting) return;
      retrying = true;
      controller?.abort();
    },
  };
}

export interface FollowOptions {
  /** Loads what the page shows; resolves truthy when its answer was taken (a newer
   * load's was not). */
  load: () => Promise<unknown>;
  onRefused?: (error: ApiError) => void;
}

/** Subscribes a page that shows what ``load`` reads: it loads at each connection's first
 * bytes, so a page whose channel connects quickly loads once and misses no change.
 * When the first connection is refused, fails, or sends nothing within
 * ``reconnect.fallbackMs``, it loads at once instead; once that answer is taken, a
 * connection still waiting is asked for again, so ``params`` can start the tails
 * (``metrics_after``...) from the answer. Later connections load again, for the changes
 * made while the channel was down. Returns the function that ends it. */
export function follow(params: Params, onEvent: EventHandler, { load, onRefused }: FollowOptions): () => void {
  let opened = false;
  let fellBack = false;
  let stopped = false;
  const fallBack = () => {
    if (opened || fellBack || stopped) return;
    fellBack = true;
    clearTimeout(timer);
    void load().then((taken) => {
      if (taken && !stopped) channel.retryNow();
    });
  };
  const timer = setTimeout(fallBack, reconnect.fallbackMs);
  const channel = connect(params, onEvent, {
    onOpen: () => {
      opened = true;
      clearTimeout(timer);
      void load();
    },
    onRefused: (error) => {
      onRefused?.(error);
      fallBack();
    },
    onDown: fallBack,
  });
  return () => {
    stopped = true;
    clearTimeout(timer);
    channel.stop();
  };
}
