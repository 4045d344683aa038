/** The master's live channel (GET /api/v1/ui/events, server-sent events).

Read with fetch rather than EventSource so the session token goes in the
Authorization header, as on every other request. Reconnects after errors. */
import { authHeaders } from "./api";

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

/** Subscribe to the channel; ``params`` are its query (``experiments``, ``experiment_id``...).
 * ``params`` is called at each (re)connect so it can pass the newest ids seen.
 * ``onOpen`` runs when a connection's first bytes arrive: the master has then read the
 * state its events change, so a page that reloads there misses no change made before. */
export function subscribe(
  params: () => Record<string, string | number | boolean>,
  onEvent: EventHandler,
  onOpen?: () => void,
): () => void {
  let stopped = false;
  let controller: AbortController | null = null;
  const run = async () => {
    while (!stopped) {
      controller = new AbortController();
      try {
        const query = new URLSearchParams(Object.entries(params()).map(([k, v]) => [k, String(v)]));
        const response = await fetch(`/api/v1/ui/events?${query}`, {
          headers: authHeaders(),
          signal: controller.signal,
        });
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
      if (!stopped) await new Promise((r) => setTimeout(r, 2000));
    }
  };
  void run();
  return () => {
    stopped = true;
    controller?.abort();
  };
}
