/** A sortable table: click a header to sort by it, again to reverse. */
import { useMemo, useState, type ReactNode } from "react";
import { compareValues } from "../format";

export interface Column<T> {
  key: string;
  title: ReactNode;
  value: (row: T) => unknown;
  render?: (row: T) => ReactNode;
  sortable?: boolean;
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
}

export default function Table<T>({ columns, rows, rowKey, initialSort, testId, rowClass, sort, onSort, leading, leadingHeader }: Props<T>) {
  const [local, setLocal] = useState<{ key: string; desc: boolean }>({
    key: initialSort?.key ?? "",
    desc: initialSort?.desc ?? false,
  });
  const active = sort ?? local;
  const sorted = useMemo(() => {
    if (sort || !active.key) return rows;
    const col = columns.find((c) => c.key === active.key);
    if (!col) return rows;
    const out = [...rows].sort((a, b) => compareValues(col.value(a), col.value(b)));
    return active.desc ? out.reverse() : out;
  }, [rows, columns, active.key, active.desc, sort]);
  const click = (key: string) => {
    const desc = active.key === key ? !active.desc : false;
    if (onSort) onSort(key, desc);
    else setLocal({ key, desc });
  };
  return (
    <table className="table" data-testid={testId}>
      <thead>
        <tr>
          {leading && <th>{leadingHeader}</th>}
          {columns.map((c) => (
            <th
              key={c.key}
              className={c.sortable === false ? "" : "sortable"}
              aria-sort={active.key === c.key ? (active.desc ? "descending" : "ascending") : undefined}
              onClick={c.sortable === false ? undefined : () => click(c.key)}
            >
              {c.title}
              {active.key === c.key ? (active.desc ? " ▼" : " ▲") : ""}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {sorted.map((row) => (
          <tr key={rowKey(row)} className={rowClass?.(row)}>
            {leading && <td>{leading(row)}</td>}
            {columns.map((c) => (
              <td key={c.key}>{c.render ? c.render(row) : formatCell(c.value(row))}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function formatCell(v: unknown): ReactNode {
  if (v == null) return "";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}
