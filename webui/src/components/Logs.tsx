/** A trial's or a task's logs: live tail, search, download. Lines are text, never HTML. */
import { useEffect, useRef, useState } from "react";
import { api, type LogLine } from "../api";
import { logLinePaths } from "../failure";
import { ErrorLine } from "./Bits";

const KEEP = 5000;

/** The ``lines`` whose text as shown (``display``: a trial's lines with paths in the model
 * directory) contains ``search``, case-insensitive: the search finds what the view shows. */
export function filterLines(lines: LogLine[], search: string, display: (line: string) => string = (line) => line): LogLine[] {
  if (!search) return lines;
  const s = search.toLowerCase();
  return lines.filter((l) => display(l.line).toLowerCase().includes(s));
}

/** Whose logs: a trial's (searched on the server) or a task's (searched here). */
export type LogSource = { trialId: number; taskId?: undefined } | { taskId: string; trialId?: undefined };

function logsPath(source: LogSource): string {
  return source.taskId !== undefined ? `/tasks/${encodeURIComponent(source.taskId)}/logs` : `/trials/${source.trialId}/logs`;
}

function sourceName(source: LogSource): string {
  return source.taskId !== undefined ? `task-${source.taskId}` : `trial-${source.trialId}`;
}

async function downloadAll(source: LogSource): Promise<void> {
  const parts: string[] = [];
  let after = 0;
  for (;;) {
    const { logs } = await api<{ logs: LogLine[] }>(`${logsPath(source)}?after_id=${after}&limit=10000`);
    if (!logs.length) break;
    for (const l of logs) parts.push(l.line.endsWith("\n") ? l.line : `${l.line}\n`);
    after = logs[logs.length - 1].id;
  }
  const url = URL.createObjectURL(new Blob(parts, { type: "text/plain" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = `${sourceName(source)}-logs.txt`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** ``live`` lines come from the page's event subscription (the ``logs`` events);
 * ``onTail`` gets the newest line id of the tail shown first (0: none), to follow from. */
export default function Logs({ live, onTail, ...source }: LogSource & { live: LogLine[]; onTail?: (lastId: number) => void }) {
  const { trialId, taskId } = source as { trialId?: number; taskId?: string };
  const key = sourceName(source);
  const [lines, setLines] = useState<LogLine[]>([]);
  const [search, setSearch] = useState("");
  const [found, setFound] = useState<LogLine[] | null>(null);
  const [follow, setFollow] = useState(true);
  const [error, setError] = useState<unknown>(null);
  const box = useRef<HTMLPreElement>(null);

  useEffect(() => {
    setLines([]);
    api<{ logs: LogLine[] }>(`${logsPath(source)}?tail=1000`)
      .then((r) => {
        setLines((cur) => merge(r.logs, cur));
        onTail?.(r.logs.at(-1)?.id ?? 0);
      }, (e) => {
        setError(e);
        onTail?.(0);
      });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  useEffect(() => {
    if (live.length) setLines((cur) => merge(cur, live));
  }, [live]);
  useEffect(() => {
    if (!search || trialId === undefined) {
      setFound(null);
      return;
    }
    const t = setTimeout(() => {
      api<{ logs: LogLine[] }>(`/ui/trials/${trialId}/logs?search=${encodeURIComponent(search)}&limit=5000`)
        .then((r) => setFound(r.logs))
        .catch(setError);
    }, 250);
    return () => clearTimeout(t);
  }, [search, trialId]);
  useEffect(() => {
    if (follow && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [lines, follow, found]);

  // A trial's tracebacks name files in the model directory, as its failure box does, not in
  // the copy the trial ran in (removed once it ended); a download has the lines as written.
  const display = trialId !== undefined ? logLinePaths : (line: string) => line;
  // While the server's search runs (it matches lines as shown too), the lines at hand are
  // filtered already.
  const shown = search ? merge(found ?? [], filterLines(lines, search, display)) : lines;
  return (
    <section className="logs">
      <div className="controls">
        <input aria-label="search logs" placeholder="search logs" value={search} onChange={(e) => setSearch(e.target.value)} />
        <label><input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> follow</label>
        <button onClick={() => void downloadAll(source).catch(setError)}>download</button>
        <span className="muted">{shown.length} lines</span>
      </div>
      <ErrorLine error={error} />
      <pre ref={box} className="log" data-testid={taskId !== undefined ? "task-logs" : "trial-logs"}>
        {shown.map((l) => (
          <div key={l.id} className="log-line">{display(l.line)}</div>
        ))}
      </pre>
    </section>
  );
}

/** Lines of both lists by id, without duplicates, at most the newest KEEP. */
export function merge(a: LogLine[], b: LogLine[]): LogLine[] {
  const byId = new Map<number, LogLine>();
  for (const l of a) byId.set(l.id, l);
  for (const l of b) byId.set(l.id, l);
  const out = [...byId.values()].sort((x, y) => x.id - y.id);
  return out.length > KEEP ? out.slice(out.length - KEEP) : out;
}
