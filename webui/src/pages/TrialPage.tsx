/** One trial: hyperparameters, per-workload and per-batch charts, workloads, checkpoints, logs, kill. */
import { useCallback, useEffect, useMemo, useState } from "react";
import { Link, useParams } from "react-router";
import { api, canEdit, post, type LogLine, type MetricRow, type Series, type Trial } from "../api";
import { subscribe } from "../events";
import { flattenHparams, formatNumber, formatTime, seriesColor, TERMINAL } from "../format";
import { useSession } from "../session";
import { ConfirmButton, ErrorLine, StateBadge } from "../components/Bits";
import LineChart from "../components/LineChart";
import Checkpoints from "../components/Checkpoints";
import GpuMetrics from "../components/GpuMetrics";
import Logs from "../components/Logs";
import Table, { type Column } from "../components/Table";
import { appendRows, type CurveData } from "../components/Curves";

interface Workload {
  id: number;
  kind: string;
  total_batches: number;
  end_time: string;
  metrics: Record<string, unknown>;
}

interface WorkloadsResponse {
  workloads: Workload[];
  total: number;
  trial: Trial;
  metric_names: { training: string[]; validation: string[] };
  last_metric_id: number;
}

export default function TrialPage() {
  const trialId = Number(useParams().trialId);
  const { user } = useSession();
  const [info, setInfo] = useState<WorkloadsResponse | null>(null);
  const [owner, setOwner] = useState<{ owner: string; metric: string } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [page, setPage] = useState(0);
  const [live, setLive] = useState<LogLine[]>([]);
  const [liveRows, setLiveRows] = useState<MetricRow[]>([]);
  const pageSize = 50;

  const load = useCallback(async () => {
    try {
      const r = await api<WorkloadsResponse>(`/ui/trials/${trialId}/workloads?order=desc&offset=${page * pageSize}&limit=${pageSize}`);
      setInfo(r);
      if (r.trial) {
        const e = await api<{ owner: string; metric: string }>(`/ui/experiments/${r.trial.experiment_id}`);
        setOwner({ owner: e.owner, metric: e.metric });
      }
    } catch (e) {
      setError(e);
    }
  }, [trialId, page]);
  useEffect(() => {
    void load();
  }, [load]);

  const ready = info != null;
  useEffect(() => {
    if (!ready) return;
    let metricsAfter = info?.last_metric_id ?? 0;
    let logsAfter = 0;
    const stop = subscribe(() => ({ trial_id: trialId, metrics_after: metricsAfter, logs_after: logsAfter }), (name, payload) => {
      if (name === "logs") {
        const lines = payload as LogLine[];
        logsAfter = lines[lines.length - 1].id;
        setLive(lines);
      } else if (name === "metrics") {
        const rows = payload as MetricRow[];
        metricsAfter = rows[rows.length - 1].id;
        setLiveRows(rows);
      } else if (name === "trials") {
        setInfo((i) => (i ? { ...i, trial: { ...i.trial, ...(payload as Trial[])[0] } } : i));
      }
    });
    return stop;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [trialId, ready]);

  if (error) return <ErrorLine error={error} />;
  if (!info) return <p className="muted">Loading…</p>;
  const t = info.trial;
  const mayEdit = owner != null && canEdit(user, owner.owner);
  const hp = flattenHparams(t.hparams);
  const kill = async () => {
    try {
      await post(`/trials/${trialId}/kill`);
      await load();
    } catch (e) {
      setError(e);
    }
  };
  const names = [...new Set(info.workloads.flatMap((w) => Object.keys(w.metrics)))];
  const columns: Column<Workload>[] = [
    { key: "batches", title: "Batches", value: (w) => w.total_batches },
    { key: "kind", title: "Kind", value: (w) => w.kind },
    ...names.map((n) => ({ key: n, title: n, value: (w: Workload) => w.metrics[n], render: (w: Workload) => formatNumber(w.metrics[n]) })),
    { key: "time", title: "Time", value: (w) => w.end_time, render: (w) => formatTime(w.end_time) },
  ];
  return (
    <div>
      <h1>
        <Link to={`/experiments/${t.experiment_id}`}>Experiment {t.experiment_id}</Link> / Trial {t.id} <StateBadge state={t.state} />
      </h1>
      <div className="actions">
        <ConfirmButton label="kill trial" testId="kill-trial" disabled={!mayEdit || TERMINAL.has(t.state)}
          question={`Kill trial ${t.id}? It stops now without a checkpoint.`} confirmLabel="yes, kill it" onConfirm={() => void kill()} />
        {!mayEdit && <span className="muted">read-only</span>}
      </div>
      <div className="summary">
        <dl>
          <dt>Batches</dt><dd>{t.total_batches.toLocaleString("en-US")}</dd>
          <dt>Best {owner?.metric}</dt><dd>{formatNumber(t.best_validation)}</dd>
          <dt>Restarts</dt><dd>{t.restarts}</dd>
          <dt>Seed</dt><dd>{t.seed}</dd>
          <dt>Started</dt><dd>{formatTime(t.start_time)}</dd>
        </dl>
        <table className="table hparams" data-testid="hparams">
          <thead><tr><th>Hyperparameter</th><th>Value</th></tr></thead>
          <tbody>{Object.entries(hp).map(([k, v]) => <tr key={k}><td>{k}</td><td>{typeof v === "object" ? JSON.stringify(v) : String(v)}</td></tr>)}</tbody>
        </table>
      </div>
      {owner && <TrialCharts trial={t} names={info.metric_names} liveRows={liveRows} searcherMetric={owner.metric} />}
      <GpuMetrics trialId={t.id} running={!TERMINAL.has(t.state)} />
      <h2>Workloads</h2>
      <Table testId="workloads-table" columns={columns} rows={info.workloads} rowKey={(w) => `${w.kind}-${w.total_batches}`} />
      <div className="pager">
        <button disabled={page <= 0} onClick={() => setPage(page - 1)}>‹ newer</button>
        <span>{info.total} workloads</span>
        <button disabled={(page + 1) * pageSize >= info.total} onClick={() => setPage(page + 1)}>older ›</button>
      </div>
      <h2>Checkpoints</h2>
      <Checkpoints experimentId={t.experiment_id} trialId={t.id} metric={owner?.metric ?? ""} />
      <h2>Logs</h2>
      <Logs trialId={trialId} live={live} />
    </div>
  );
}

/** The metric a trial's chart opens on: the searcher's metric as a validation metric when
 * the trial reported it, else the first one there is. */
export function defaultMetricKey(options: string[], searcherMetric: string): string | null {
  const wanted = `validation:${searcherMetric}`;
  return options.includes(wanted) ? wanted : options[0] ?? null;
}

function TrialCharts({ trial, names, liveRows, searcherMetric }: {
  trial: Trial; names: { training: string[]; validation: string[] }; liveRows: MetricRow[]; searcherMetric: string;
}) {
  const options = useMemo(() => [...names.validation.map((m) => `validation:${m}`), ...names.training.map((m) => `training:${m}`)], [names]);
  const [choice, setChoice] = useState<string | null>(null);
  const key = choice ?? defaultMetricKey(options, searcherMetric);
  const [perBatch, setPerBatch] = useState(false);
  const [data, setData] = useState<CurveData | null>(null);
  const [kind, metric] = key ? (key.split(/:(.*)/s) as ["training" | "validation", string]) : ["training" as const, ""];
  useEffect(() => {
    if (!key) return;
    api<Series>(`/ui/trials/${trial.id}/metrics?kind=${kind}&metric=${encodeURIComponent(metric)}&per_batch=${perBatch && kind === "training"}&max_points=2000`)
      .then((s) => setData({ metric, kind, series: [s] }))
      .catch(() => setData(null));
  }, [trial.id, key, kind, metric, perBatch]);
  useEffect(() => {
    if (liveRows.length && !perBatch) setData((d) => (d ? appendRows(d, liveRows, [trial]) : d));
  }, [liveRows, perBatch, trial]);
  if (!options.length) return <p className="muted">No metrics yet.</p>;
  const s = data?.series[0];
  return (
    <section>
      <label>metric{" "}
        <select aria-label="trial metric" value={key ?? ""} onChange={(e) => setChoice(e.target.value)}>
          {options.map((o) => <option key={o} value={o}>{o.replace(":", ": ")}</option>)}
        </select>
      </label>{" "}
      <label><input type="checkbox" checked={perBatch} disabled={kind !== "training"} onChange={(e) => setPerBatch(e.target.checked)} /> per batch</label>
      {s && <LineChart testId="trial-chart" series={[{ label: `${kind} ${metric}`, xs: s.batches, ys: s.values, color: seriesColor(0) }]} xLabel="batches" yLabel={metric} height={260}
        markers={kind === "validation" ? "all" : "last"} />}
    </section>
  );
}
