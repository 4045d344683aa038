/** The master's own log (GET /api/v1/master/logs), followed every 2 s. */
import { useEffect, useRef, useState } from "react";
import { api, ApiError } from "../api";
import { ErrorLine } from "../components/Bits";
import { formatTime } from "../format";
import { usePageTitle } from "../title";

interface MasterLine { id: number; timestamp: string; level?: string; line: string }

export default function MasterLogs() {
  usePageTitle("Master logs");
  const [lines, setLines] = useState<MasterLine[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [search, setSearch] = useState("");
  const after = useRef(0);
  const box = useRef<HTMLPreElement>(null);
  useEffect(() => {
    let live = true;
    const load = async () => {
      try {
        const query = after.current ? `after_id=${after.current}&limit=5000` : "tail=2000";
        const { logs } = await api<{ logs: MasterLine[] }>(`/master/logs?${query}`);
        if (!live) return;
        setError(null); // a failed poll's error goes once the master answers again
        if (!logs.length) return;
        after.current = logs[logs.length - 1].id;
        setLines((cur) => [...cur, ...logs].slice(-5000));
      } catch (e) {
        if (live) setError(e instanceof ApiError && e.status === 404 ? new Error("This master does not serve its logs (no GET /api/v1/master/logs).") : e);
      }
    };
    void load();
    const timer = setInterval(load, 2000);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  useEffect(() => {
    if (box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [lines]);
  const s = search.toLowerCase();
  const shown = s ? lines.filter((l) => l.line.toLowerCase().includes(s)) : lines;
  return (
    <div>
      <h1>Master logs</h1>
      <div className="controls">
        <input aria-label="search master logs" placeholder="search" value={search} onChange={(e) => setSearch(e.target.value)} />
        <span className="muted">{shown.length} lines</span>
      </div>
      <ErrorLine error={error} />
      <pre ref={box} className="log" data-testid="master-logs">
        {shown.map((l) => (
          <div key={l.id} className={`log-line level-${(l.level ?? "").toLowerCase()}`}>
            <span className="muted" title={l.timestamp}>{formatTime(l.timestamp)}</span> {l.level ? `[${l.level}] ` : ""}{l.line}
          </div>
        ))}
      </pre>
    </div>
  );
}
