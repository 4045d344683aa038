/** A sortable table: click a header to sort by it, again to reverse. A table wider than its
 * box scrolls sideways in its own box (narrow windows), not the whole page; a column's
 * ``className`` lets it wrap (``wrap``) or go below 1000 pixels (``wide-only``). */
import { useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { compareValues } from "../format";

export interface Column<T> {
  key: string;
  title: ReactNode;
  value: (row: T) => unknown;
  render?: (row: T) => ReactNode;
  sortable?: boolean;
  /** On the column's header and cells: ``wrap`` (its text may wrap), ``wide-only``
   * (hidden on windows narrower than 1000 pixels). */
  className?: string;
}

interface Props<T> {
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string | number;
  initialSort?: { key: string; desc?: boolean };
  testId?: string;
  rowClass?: (row: T) => string | undefined;
  /** When given, the parent sorts (server-side); the table only reports clicks. */
  sort?: { key: string; desc: boolean };
  onSort?: (key: string, desc: boolean) => void;
  leading?: (row: T) => ReactNode;
  leadingHeader?: ReactNode;
  /** Shown in the body when there are no rows (a table of headers alone says nothing). */
  empty?: ReactNode;
  /** Only the first ``limit`` rows in the table's order show (the parent offers the rest). */
  limit?: number;
}

export default function Table<T>({ columns, rows, rowKey, initialSort, testId, rowClass, sort, onSort, leading, leadingHeader, empty, limit }: Props<T>) {
  const [local, setLocal] = useState<{ key: string; desc: boolean }>({
    key: initialSort?.key ?? "",
    desc: initialSort?.desc ?? false,
  });
  const active = sort ?? local;
  const sorted = useMemo(() => {
    const col = sort || !active.key ? undefined : columns.find((c) => c.key === active.key);
    let out = rows;
    if (col) {
      out = [...rows].sort((a, b) => compareValues(col.value(a), col.value(b)));
      if (active.desc) out.reverse();
    }
    return limit != null && out.length > limit ? out.slice(0, limit) : out;
  }, [rows, columns, active.key, active.desc, sort, limit]);
  const window_ = useWindow(sorted.length);
  const click = (key: string) => {
    const desc = active.key === key ? !active.desc : false;
    if (onSort) onSort(key, desc);
    else setLocal({ key, desc });
  };
  return (
    <div className="table-scroll" data-testid={testId ? `${testId}-scroll` : undefined}>
    <table className="table" data-testid={testId}>
      <thead>
        <tr>
          {leading && <th>{leadingHeader}</th>}
          {columns.map((c) => (
            <th
              key={c.key}
              className={[c.sortable === false ? "" : "sortable", c.className ?? ""].join(" ").trim() || undefined}
              aria-sort={active.key === c.key ? (active.desc ? "descending" : "ascending") : undefined}
              onClick={c.sortable === false ? undefined : () => click(c.key)}
            >
              {c.title}
              {active.key === c.key ? (active.desc ? " ▼" : " ▲") : ""}
            </th>
          ))}
        </tr>
      </thead>
      <tbody ref={window_.body} data-rows={sorted.length}>
        {sorted.length === 0 && empty != null && (
          <tr className="empty"><td className="muted" colSpan={columns.length + (leading ? 1 : 0)}
            data-testid={testId ? `${testId}-empty` : undefined}>{empty}</td></tr>
        )}
        {window_.top > 0 && <tr className="spacer" style={{ height: window_.top }}><td colSpan={columns.length + (leading ? 1 : 0)} /></tr>}
        {sorted.slice(window_.start, window_.end).map((row) => (
          <tr key={rowKey(row)} className={rowClass?.(row)}>
            {leading && <td>{leading(row)}</td>}
            {columns.map((c) => (
              <td key={c.key} className={c.className}>{c.render ? c.render(row) : formatCell(c.value(row))}</td>
            ))}
          </tr>
        ))}
        {window_.bottom > 0 && <tr className="spacer" style={{ height: window_.bottom }}><td colSpan={columns.length + (leading ? 1 : 0)} /></tr>}
      </tbody>
    </table>
    </div>
  );
}

function formatCell(v: unknown): ReactNode {
  if (v == null) return "";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

const WINDOW_FROM = 200; // longer tables render only the rows near the viewport
const OVERSCAN = 40;

/** Which rows of a long table to render: those near the viewport (page scroll), with
 * spacers for the rest, so 1,000 rows cost what 100 do. Row height is measured. */
function useWindow(count: number) {
  const body = useRef<HTMLTableSectionElement>(null);
  const [view, setView] = useState({ start: 0, end: Math.min(count, 100), rowHeight: 30 });
  useEffect(() => {
    if (count <= WINDOW_FROM) return;
    const update = () => {
      const el = body.current;
      if (!el) return;
      const rows = el.querySelectorAll("tr:not(.spacer)");
      let rowHeight = view.rowHeight;
      if (rows.length) {
        const first = rows[0].getBoundingClientRect();
        const last = rows[rows.length - 1].getBoundingClientRect();
        rowHeight = Math.max(10, (last.bottom - first.top) / rows.length);
      }
      const top = el.getBoundingClientRect().top;
      const start = Math.max(0, Math.floor(-top / rowHeight) - OVERSCAN);
      const end = Math.min(count, Math.ceil((window.innerHeight - top) / rowHeight) + OVERSCAN);
      setView((v) => (v.start === start && v.end === end && Math.abs(v.rowHeight - rowHeight) < 0.5 ? v : { start, end: Math.max(end, start), rowHeight }));
    };
    update();
    window.addEventListener("scroll", update, { passive: true });
    window.addEventListener("resize", update);
    return () => {
      window.removeEventListener("scroll", update);
      window.removeEventListener("resize", update);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [count]);
  if (count <= WINDOW_FROM) return { body, start: 0, end: count, top: 0, bottom: 0 };
  const start = Math.min(view.start, count);
  const end = Math.min(Math.max(view.end, start), count);
  return { body, start, end, top: start * view.rowHeight, bottom: (count - end) * view.rowHeight };
}
