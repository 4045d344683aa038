/** Checkpoints of an experiment or a trial: size, metrics, metadata, download. */
import { useEffect, useState } from "react";
import { Link } from "react-router";
import { api, authHeaders, type Checkpoint } from "../api";
import { formatBytes, formatNumber, stepsTitle, validationMetrics } from "../format";
import Table, { type Column } from "./Table";
import { Breakable, BreakableId, ErrorLine, Metadata, StateBadge, When } from "./Bits";

/** Where a checkpoint's files are downloaded from (a tar, through the master). */
export const downloadPath = (uuid: string) => `/api/v1/checkpoints/${uuid}/download`;

async function download(uuid: string): Promise<void> {
  const response = await fetch(downloadPath(uuid), { headers: authHeaders() });
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try {
      message = (await response.json()).error ?? message;
    } catch {
      /* not JSON */
    }
    throw new Error(`Download of ${uuid} failed: ${message}`);
  }
  const url = URL.createObjectURL(await response.blob());
  const a = document.createElement("a");
  a.href = url;
  a.download = `checkpoint-${uuid}.tar`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** Newest first: the checkpoint a user wants is usually the latest. */
export const NEWEST_FIRST = { key: "time", desc: true };

/** ``version`` changes when the checkpoints may have (a trial's latest checkpoint or state,
 * from the page's live channel): the list reloads, showing the rows at hand meanwhile.
 * With ``collapsed``, more checkpoints than that show the first ``collapsed`` (the newest,
 * unless the user sorts) and a "show all" toggle, so a long list does not push what
 * follows (a trial's logs) far down. */
export default function Checkpoints({ experimentId, trialId, metric, version = "", unit, collapsed }: {
  experimentId: number; trialId?: number; metric: string; version?: string; unit?: string; collapsed?: number;
}) {
  const [rows, setRows] = useState<Checkpoint[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  // Expanded for one trial: another trial shown on the same page opens collapsed.
  const [expandedFor, setExpandedFor] = useState<string | null>(null);
  const expanded = expandedFor === `${experimentId}:${trialId}`;
  useEffect(() => {
    let current = true; // an older answer arriving late does not replace a newer one
    api<{ checkpoints: Checkpoint[] }>(`/experiments/${experimentId}/checkpoints`)
      .then((r) => {
        if (!current) return;
        setRows(trialId == null ? r.checkpoints : r.checkpoints.filter((c) => c.trial_id === trialId));
        setError(null);
      })
      .catch((e) => current && setError(e));
    return () => {
      current = false;
    };
  }, [experimentId, trialId, version]);
  if (error) return <ErrorLine error={error} />;
  if (!rows) return <p className="muted">Loading…</p>;
  if (!rows.length) return <p className="muted">No checkpoints.</p>;
  const size = (c: Checkpoint) => Object.values(c.resources ?? {}).reduce((a, b) => a + (Number(b) || 0), 0);
  const value = (c: Checkpoint) => {
    const v = validationMetrics(c.validation)[metric];
    return typeof v === "number" ? v : null;
  };
  const columns: Column<Checkpoint>[] = [
    { key: "uuid", title: "UUID", value: (c) => c.uuid, className: "wrap", render: (c) => <BreakableId id={c.uuid} /> },
    // A trial's page lists its own checkpoints: the column would repeat its id.
    ...(trialId == null ? [{ key: "trial", title: "Trial", value: (c: Checkpoint) => c.trial_id,
      render: (c: Checkpoint) => <Link to={`/experiments/${c.experiment_id}/trials/${c.trial_id}`}>{c.trial_id}</Link> }] : []),
    { key: "batches", title: stepsTitle(unit), value: (c) => c.total_batches },
    // A badge, as trials and experiments show their states (it was bare text).
    { key: "state", title: "State", value: (c) => c.state, render: (c) => <StateBadge state={c.state} /> },
    { key: "size", title: "Size", value: size, render: (c) => formatBytes(size(c)) },
    { key: "metric", title: <Breakable text={metric} />, value: value, className: "wrap", render: (c) => formatNumber(value(c)) },
    { key: "metadata", title: "Metadata", value: (c) => JSON.stringify(c.metadata ?? {}), sortable: false, className: "wrap",
      render: (c) => <Metadata value={c.metadata} /> },
    { key: "time", title: "Saved", value: (c) => c.end_time, className: "wrap", render: (c) => <When iso={c.end_time} /> },
    { key: "download", title: "", value: () => null, sortable: false,
      render: (c) => c.state === "COMPLETED" ? <a href={downloadPath(c.uuid)} onClick={(e) => { e.preventDefault(); download(c.uuid).catch((err) => setError(err)); }}>download</a> : null },
  ];
  const long = collapsed != null && rows.length > collapsed;
  return (
    <>
      <Table testId="checkpoints-table" columns={columns} rows={rows} rowKey={(c) => c.uuid} initialSort={NEWEST_FIRST}
        limit={long && !expanded ? collapsed : undefined} />
      {long && (
        <div className="pager" data-testid="checkpoints-pager">
          {expanded ? (
            <button className="link" data-testid="checkpoints-fewer" onClick={() => setExpandedFor(null)}>show {collapsed} only</button>
          ) : (
            <>
              <span className="muted">{collapsed} of {rows.length} checkpoints</span>
              <button className="link" data-testid="checkpoints-all" onClick={() => setExpandedFor(`${experimentId}:${trialId}`)}>show all {rows.length}</button>
            </>
          )}
        </div>
      )}
    </>
  );
}
