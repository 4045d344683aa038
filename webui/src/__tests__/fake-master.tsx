/** A fake master for page tests: ``fetch`` answers as the REST API would (``routes``),
 * records what the pages asked for (``calls``), and serves the live channel as streams the
 * test writes into, drops and refuses (``liveChannel``). */
import { vi } from "vitest";
import { cleanup, render } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import App from "../App";
import { setToken } from "../api";
import { reconnect } from "../events";

export type Reply = [number, unknown] | Response;
export type Handler = (url: URL, body: unknown, init: RequestInit) => Reply | Promise<Reply>;
export interface Call { method: string; url: URL; body: unknown }

export const USER = { id: 2, username: "determined", admin: false, active: true };
export let routes: Record<string, Handler> = {};
export let calls: Call[] = [];
const RECONNECT = { ...reconnect };

/** Installs the fake (signed in as ``USER``); the channel reconnects after 20 ms, and a page
 * waits 5 s for its channel's first connection before it loads without it (the tests
 * connect it at once, or shorten the wait). */
export function installFakeMaster(): void {
  calls = [];
  routes = { "GET /api/v1/me": () => [200, USER] };
  setToken("tok");
  reconnect.delayMs = 20;
  reconnect.fallbackMs = 5000;
  vi.stubGlobal("fetch", async (input: string, init: RequestInit = {}) => {
    const url = new URL(input, "http://master");
    const method = init.method ?? "GET";
    const body = init.body ? JSON.parse(String(init.body)) : undefined;
    calls.push({ method, url, body });
    const handler = routes[`${method} ${url.pathname}`];
    const reply: Reply = handler ? await handler(url, body, init) : [404, { error: `no route ${method} ${url.pathname}` }];
    if (reply instanceof Response) return reply;
    const [status, data] = reply;
    return new Response(JSON.stringify(data), { status, headers: { "Content-Type": "application/json" } });
  });
}

export function removeFakeMaster(): void {
  cleanup();
  vi.unstubAllGlobals();
  localStorage.clear();
  Object.assign(reconnect, RECONNECT);
}

export const callsTo = (path: string) => calls.filter((c) => c.url.pathname === path);

/** The app at ``path``. */
export function open(path: string) {
  return render(
    <MemoryRouter initialEntries={[path]}>
      <App />
    </MemoryRouter>,
  );
}

/** An answer the test gives later: ``reply`` is the route's result, ``give`` sends it. */
export function deferred(): { reply: Promise<Reply>; give: (r: Reply) => void } {
  let give: (r: Reply) => void = () => {};
  const reply = new Promise<Reply>((resolve) => { give = resolve; });
  return { reply, give };
}

/** The master's live channel (``GET /ui/events``) as the test drives it: each connection
 * is a stream the test writes server-sent events into (the newest one), drops (a network
 * error) or, for the next connection, refuses with an HTTP error. */
export function liveChannel() {
  const streams: ReadableStreamDefaultController<Uint8Array>[] = [];
  const queries: URLSearchParams[] = [];
  const refusals: [number, unknown][] = [];
  const encoder = new TextEncoder();
  const write = (text: string) => streams.at(-1)!.enqueue(encoder.encode(text));
  routes["GET /api/v1/ui/events"] = (url, _body, init) => {
    queries.push(url.searchParams);
    const refusal = refusals.shift();
    if (refusal) return refusal;
    let stream: ReadableStreamDefaultController<Uint8Array> | null = null;
    const body = new ReadableStream<Uint8Array>({ start: (c) => { stream = c; streams.push(c); } });
    init.signal?.addEventListener("abort", () => {
      try {
        stream?.error(new DOMException("aborted", "AbortError"));
      } catch {
        // already closed
      }
    });
    return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
  };
  return {
    queries,
    /** The first bytes, once the master has read the state its events change. */
    connect: () => write(": connected\n\n"),
    send: (name: string, data: unknown) => write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`),
    /** Several events in one chunk, as a slow reader gets them. */
    sendTogether: (events: [string, unknown][]) =>
      write(events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join("")),
    /** The connection breaks (the master restarts, the network fails). */
    drop: () => streams.at(-1)!.error(new TypeError("network error")),
    /** The next connection gets ``status`` with the API's error body. */
    refuseNext: (status: number, error: string) => refusals.push([status, { error }]),
  };
}
