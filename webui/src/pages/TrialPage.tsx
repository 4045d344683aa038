/** One trial: hyperparameters, per-workload and per-batch charts, workloads, checkpoints, logs, kill. */
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { Link, useParams } from "react-router";
import { api, canEdit, post, type LogLine, type MetricRow, type Series, type Trial } from "../api";
import { follow } from "../events";
import { useLoadWhenChanged, useLoaded } from "../loaded";
import { counted, flattenHparams, formatDuration, formatNumber, formatTime, metricLabel, seriesColor, stepsTitle, stepUnits, TERMINAL } from "../format";
import { useSession } from "../session";
import { ConfirmButton, ErrorLine, StateBadge } from "../components/Bits";
import { useWaits, WaitingNote } from "../components/Waiting";
import LineChart from "../components/LineChart";
import Checkpoints from "../components/Checkpoints";
import GpuMetrics from "../components/GpuMetrics";
import Logs, { merge } from "../components/Logs";
import Table, { type Column } from "../components/Table";
import { appendRows } from "../components/Curves";
import { exitLine, failureSummary, trialError, type FailureSummary } from "../failure";
import { usePageTitle } from "../title";

interface Workload {
  id: number;
  kind: string;
  total_batches: number;
  end_time: string;
  metrics: Record<string, unknown>;
}

export interface WorkloadsPage {
  workloads: Workload[];
  total: number;
  trial: Trial;
  metric_names: { training: string[]; validation: string[] };
  last_metric_id: number;
  last_log_id: number;
  /** Which page of the workloads (newest first) this is: the request's offset. */
  offset: number;
}

const workloadKey = (w: { kind: string; total_batches: number }) => `${w.kind}-${w.total_batches}`;

/** Live rows kept for the chart (each event appends; it skips what it has). */
const KEEP_ROWS = 5000;

/** The workloads page after live metric rows: on the newest page (offset 0, whichever page
 * is asked for meanwhile) new rows show on top; the count and the metric names grow. A row
 * for a workload shown already (stored again after the trial went back to a checkpoint)
 * takes its place rather than showing twice. */
export function addWorkloads(info: WorkloadsPage, rows: MetricRow[], pageSize: number): WorkloadsPage {
  // Rows after the newest this answer counted are new to it (on any page).
  const fresh = rows.filter((r) => r.id > info.last_metric_id && r.trial_id === info.trial.id);
  if (!fresh.length) return info;
  const shown = new Set(info.workloads.map(workloadKey));
  const names = (kind: string, have: string[]) => {
    const s = new Set(have);
    for (const r of fresh) if (r.kind === kind) for (const [m, v] of Object.entries(r.metrics)) if (typeof v === "number") s.add(m);
    return s.size === have.length ? have : [...s].sort();
  };
  const added: Workload[] = fresh.map((r) => ({ id: r.id, kind: r.kind, total_batches: r.total_batches,
    end_time: new Date(r.end_time * 1000).toISOString(), metrics: r.metrics }));
  const byKey = new Map(added.map((w) => [workloadKey(w), w]));
  const workloads = info.offset === 0
    ? [...byKey.values(), ...info.workloads.filter((w) => !byKey.has(workloadKey(w)))]
      .sort((a, b) => b.total_batches - a.total_batches || b.kind.localeCompare(a.kind))
      .slice(0, pageSize)
    : info.workloads.map((w) => byKey.get(workloadKey(w)) ?? w);
  const again = [...byKey.keys()].filter((k) => shown.has(k)).length;
  return { ...info, workloads, total: info.total + byKey.size - again, last_metric_id: Math.max(...fresh.map((r) => r.id)),
    metric_names: { training: names("training", info.metric_names.training), validation: names("validation", info.metric_names.validation) } };
}

/** Workload rows shown before "show all": the newest, so the logs stay near the top. */
export const WORKLOADS_COLLAPSED = 10;
/** Checkpoint rows shown before "show all" (a long trial keeps dozens, most deleted). */
export const CHECKPOINTS_COLLAPSED = 5;

/** The rows of the workloads table (newest first) that show: all when ``expanded``, else
 * the newest ``keep``. */
export function shownWorkloads<T>(rows: T[], expanded: boolean, keep = WORKLOADS_COLLAPSED): T[] {
  return expanded || rows.length <= keep ? rows : rows.slice(0, keep);
}

/** Whether live rows store again a workload ``info`` shows (a new id for its kind and
 * batches): the trial went back to a checkpoint, and the rows after it, shown or counted
 * here, were deleted; the page then reloads. */
export function storedAgain(info: WorkloadsPage | null, rows: MetricRow[]): boolean {
  if (!info) return false;
  const shown = new Map(info.workloads.map((w) => [workloadKey(w), w.id]));
  return rows.some((r) => r.trial_id === info.trial.id && r.id > info.last_metric_id && shown.has(workloadKey(r)) && shown.get(workloadKey(r)) !== r.id);
}

export default function TrialPage() {
  const trialId = Number(useParams().trialId);
  const { user } = useSession();
  const [owner, setOwner] = useState<{ owner: string; metric: string; unit?: string; maxRestarts?: number } | null>(null);
  const [ownerError, setOwnerError] = useState<unknown>(null);
  const [channelError, setChannelError] = useState<unknown>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  // The workloads' paging belongs to the trial shown: moving to another trial (the page is
  // reused) opens it at its newest workloads, collapsed. ``moves`` counts page changes the
  // user made, which load; the reset does not (the live channel loads the new trial).
  const [paging, setPaging] = useState({ trialId, page: 0, all: false, moves: 0 });
  if (paging.trialId !== trialId) setPaging({ trialId, page: 0, all: false, moves: paging.moves });
  const page = paging.trialId === trialId ? paging.page : 0;
  const allWorkloads = paging.trialId === trialId && paging.all;
  const setPage = (p: number) => setPaging((s) => (s.page === p ? s : { ...s, page: p, moves: s.moves + 1 }));
  const setAllWorkloads = (all: boolean) => setPaging((s) => ({ ...s, all }));
  const [live, setLive] = useState<LogLine[]>([]);
  const [liveRows, setLiveRows] = useState<MetricRow[]>([]);
  const pageSize = 50;

  const fetcher = useCallback(async (): Promise<WorkloadsPage> => {
    const offset = page * pageSize;
    const answer = await api<Omit<WorkloadsPage, "offset">>(`/ui/trials/${trialId}/workloads?order=desc&offset=${offset}&limit=${pageSize}`);
    return { ...answer, offset };
  }, [trialId, page]);
  const { data: info, error: loadError, load, update } = useLoaded(fetcher);
  const { waits, onEvent: onWaitingEvent } = useWaits();
  const error = loadError ?? ownerError ?? channelError ?? actionError;
  useLoadWhenChanged(load, paging.moves);
  const experimentId = info?.trial?.experiment_id;
  useEffect(() => {
    if (experimentId == null) return;
    api<{ owner: string; metric: string; step_unit?: string; config?: { max_restarts?: number } }>(`/ui/experiments/${experimentId}`)
      .then((e) => setOwner({ owner: e.owner, metric: e.metric, unit: e.step_unit, maxRestarts: e.config?.max_restarts }), setOwnerError);
  }, [experimentId]);

  // Live: the trial's state, metric rows and log lines. The workloads load when the
  // channel connects (and at each reconnection, for changes made meanwhile), or without
  // it when it is slow. The tails start when the channel first opens, then go on from the
  // newest row the page has (the first answer's or an event's), so a reconnection repeats
  // none and misses none (the chart and the logs load after the first answer). Events
  // append to the lists (a batch of events renders once).
  const infoRef = useRef(info);
  infoRef.current = info;
  const loadRef = useRef(load); // the page shown now, not the one shown at connecting
  loadRef.current = load;
  useEffect(() => {
    setLive([]);
    setLiveRows([]);
    setChannelError(null);
    let metricsAfter: number | null = null;
    let logsAfter: number | null = null;
    let reloading: ReturnType<typeof setTimeout> | undefined;
    const onEvent = (name: string, payload: any) => {
      if (onWaitingEvent(name, payload)) return;
      if (name === "logs") {
        const lines = payload as LogLine[];
        logsAfter = lines[lines.length - 1].id;
        setLive((cur) => merge(cur, lines));
      } else if (name === "metrics") {
        const rows = payload as MetricRow[];
        metricsAfter = rows[rows.length - 1].id;
        setLiveRows((cur) => [...cur, ...rows].slice(-KEEP_ROWS));
        update((i) => addWorkloads(i, rows, pageSize));
        if (storedAgain(infoRef.current, rows) && reloading === undefined) {
          reloading = setTimeout(() => {
            reloading = undefined;
            void loadRef.current();
          }, 300); // the rows stored again come in several events: one reload
        }
      } else if (name === "trials") {
        update((i) => ({ ...i, trial: { ...i.trial, ...(payload as Trial[])[0] } }));
      }
    };
    const loadTails = async () => {
      const answer = await loadRef.current();
      if (answer?.trial?.id === trialId) {
        metricsAfter ??= answer.last_metric_id;
        logsAfter ??= answer.last_log_id;
      }
      return answer;
    };
    const stop = follow(() => ({
      trial_id: trialId,
      waiting: true,
      ...(metricsAfter != null && { metrics_after: metricsAfter }),
      ...(logsAfter != null && { logs_after: logsAfter }),
    }), onEvent, { load: loadTails, onRefused: setChannelError });
    return () => {
      stop();
      clearTimeout(reloading);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [trialId]);

  const shownTrial = info?.trial?.id === trialId ? info.trial : null;
  usePageTitle(`Trial ${trialId}`, shownTrial?.state, shownTrial && `Experiment ${shownTrial.experiment_id}`);
  if (!info?.trial || info.trial.id !== trialId) return error ? <ErrorLine error={error} /> : <p className="muted">Loading…</p>;
  const t = info.trial;
  const mayEdit = owner != null && canEdit(user, owner.owner);
  const hp = flattenHparams(t.hparams);
  const kill = async () => {
    try {
      setActionError(null);
      await post(`/trials/${trialId}/kill`);
      await load();
    } catch (e) {
      setActionError(e);
    }
  };
  const names = [...new Set(info.workloads.flatMap((w) => Object.keys(w.metrics)))];
  const columns: Column<Workload>[] = [
    { key: "batches", title: stepsTitle(owner?.unit), value: (w) => w.total_batches },
    { key: "kind", title: "Kind", value: (w) => w.kind },
    ...names.map((n) => ({ key: n, title: n, value: (w: Workload) => w.metrics[n], render: (w: Workload) => formatNumber(w.metrics[n]) })),
    { key: "time", title: "Time", value: (w) => w.end_time, render: (w) => formatTime(w.end_time) },
  ];
  return (
    <div>
      <h1>
        <Link to={`/experiments/${t.experiment_id}`}>Experiment {t.experiment_id}</Link> / Trial {t.id} <StateBadge state={t.state} />
      </h1>
      {waits.trials[t.id] ? (
        <p className="waiting" data-testid="trial-waiting"><WaitingNote wait={waits.trials[t.id]} full /></p>
      ) : null}
      {!TERMINAL.has(t.state) && (
        <div className="actions">
          <ConfirmButton label="kill trial" testId="kill-trial" disabled={!mayEdit}
            question={`Kill trial ${t.id}? It stops now without a checkpoint.`} confirmLabel="yes, kill it" onConfirm={() => void kill()} />
          {!mayEdit && <span className="muted">read-only</span>}
        </div>
      )}
      <ErrorLine error={error} />
      <TrialFailure trial={t} maxRestarts={owner?.maxRestarts} />
      <div className="summary">
        <dl>
          <dt>{stepsTitle(owner?.unit)}</dt><dd>{t.total_batches.toLocaleString("en-US")}</dd>
          <dt>Best {owner?.metric}</dt><dd>{t.best_validation == null ? <span className="muted">no validation yet</span> : formatNumber(t.best_validation)}</dd>
          <dt>Restarts</dt><dd>{t.restarts}</dd>
          <dt>Seed</dt><dd>{t.seed}</dd>
          <dt>Started</dt><dd>{formatTime(t.start_time)}</dd>
          {t.end_time && TERMINAL.has(t.state) && (
            <><dt>Ended</dt><dd data-testid="trial-ended">{formatTime(t.end_time)}{t.start_time ? ` · ${formatDuration((Date.parse(t.end_time) - Date.parse(t.start_time)) / 1000)}` : ""}</dd></>
          )}
        </dl>
        {Object.keys(hp).length === 0 ? <p className="muted hparams" data-testid="hparams">No hyperparameters.</p> : (
          <table className="table hparams" data-testid="hparams">
            <thead><tr><th>Hyperparameter</th><th>Value</th></tr></thead>
            <tbody>{Object.entries(hp).map(([k, v]) => <tr key={k}><td>{k}</td><td><HparamValue value={v} /></td></tr>)}</tbody>
          </table>
        )}
      </div>
      {owner && <TrialCharts trial={t} names={info.metric_names} liveRows={liveRows} searcherMetric={owner.metric} unit={owner.unit} />}
      <GpuMetrics trialId={t.id} running={!TERMINAL.has(t.state)} />
      <h2>Workloads</h2>
      <Table testId="workloads-table" columns={columns} rows={shownWorkloads(info.workloads, allWorkloads)} rowKey={workloadKey}
        empty={TERMINAL.has(t.state) ? "None: the trial ended before it reported any." : "None yet: training and validation results show here as the trial reports them."} />
      {allWorkloads || info.total <= WORKLOADS_COLLAPSED ? (
        <div className="pager" data-testid="workloads-pager">
          <button disabled={page <= 0} onClick={() => setPage(page - 1)}>‹ newer</button>
          <span>{info.total} workloads</span>
          <button disabled={(page + 1) * pageSize >= info.total} onClick={() => setPage(page + 1)}>older ›</button>
          {allWorkloads && <button className="link" data-testid="workloads-fewer"
            onClick={() => { setAllWorkloads(false); setPage(0); }}>show the newest {WORKLOADS_COLLAPSED} only</button>}
        </div>
      ) : (
        <div className="pager">
          <span className="muted">The newest {WORKLOADS_COLLAPSED} of {info.total} workloads</span>
          <button className="link" data-testid="workloads-all" onClick={() => setAllWorkloads(true)}>show all {info.total}</button>
        </div>
      )}
      <h2>Checkpoints</h2>
      <Checkpoints experimentId={t.experiment_id} trialId={t.id} metric={owner?.metric ?? ""} unit={owner?.unit}
        version={`${t.latest_checkpoint}:${t.state}`} collapsed={CHECKPOINTS_COLLAPSED} />
      <h2 id="logs">Logs</h2>
      <Logs trialId={trialId} live={live} />
    </div>
  );
}

/** Lines read from the end of a trial's log for why it failed (the traceback and the lines
 * around it). */
const FAILURE_TAIL = 400;

/** Why the trial failed, at the top of its page (it was only in the log, below the
 * charts and tables): for an ERROR trial, and for one that restarted after a failure. The
 * cause is the trial's ``error``'s (the traceback, whole, one click away) and what
 * followed ("no restarts left ...") comes from its restart count and the experiment's
 * ``max_restarts`` (``maxRestarts``, undefined until known); for a trial from before the
 * master stored errors, both are read from the log (its exit line, without the cause). */
function TrialFailure({ trial, maxRestarts }: { trial: Trial; maxRestarts?: number }) {
  const failed = trial.state === "ERROR";
  const wanted = failed || trial.restarts > 0;
  const stored = useMemo(() => (trial.error ? trialError(trial.error) : null), [trial.error]);
  const [summary, setSummary] = useState<FailureSummary | null>(null);
  // The log is read only for a trial without a stored error.
  const readLog = wanted && stored == null;
  useEffect(() => {
    setSummary(null);
    if (!readLog) return;
    let current = true;
    api<{ logs: LogLine[] }>(`/trials/${trial.id}/logs?tail=${FAILURE_TAIL}`)
      .then((r) => current && setSummary(failureSummary(r.logs.map((l) => l.line))), () => undefined);
    return () => {
      current = false;
    };
  }, [trial.id, readLog, trial.state, trial.restarts]);
  if (!wanted) return null;
  const cause = stored?.cause ?? summary?.cause ?? null;
  const exit = stored ? exitLine(stored.head, trial.state, trial.restarts, maxRestarts) : summary?.exit ?? null;
  const seeLog = <a href="#logs">the log</a>;
  const detail = stored?.detail ? (
    <details className="trial-error" data-testid="trial-error">
      <summary>{/Traceback \(most recent call last\)/.test(stored.detail) ? "traceback" : "its last output"}</summary>
      <pre>{stored.detail}</pre>
    </details>
  ) : null;
  if (failed) {
    return (
      <div className="error trial-failure" role="alert" data-testid="trial-failure">
        <strong>Failed: </strong>
        {stored == null && summary == null ? <span>reading the log…</span> : <span className="why">{cause ?? exit ?? "the log does not say why"}</span>}
        {cause && exit && <div className="muted">{exit}</div>}
        {detail}
        <div>More in {seeLog} below.</div>
      </div>
    );
  }
  return (
    <div className="hint trial-failure-hint" data-testid="trial-failure">
      Restarted after {counted(trial.restarts, "failure")}{cause || exit ? <>; the last: <span className="why">{cause ?? exit}</span></> : null} (see {seeLog}).
      {detail}
    </div>
  );
}

/** The metric a trial's chart opens on: the searcher's metric as a validation metric when
 * the trial reported it, else the first one there is. */
export function defaultMetricKey(options: string[], searcherMetric: string): string | null {
  const wanted = `validation:${searcherMetric}`;
  return options.includes(wanted) ? wanted : options[0] ?? null;
}

function TrialCharts({ trial, names, liveRows, searcherMetric, unit }: {
  trial: Trial; names: { training: string[]; validation: string[] }; liveRows: MetricRow[]; searcherMetric: string; unit?: string;
}) {
  const options = useMemo(() => [...names.validation.map((m) => `validation:${m}`), ...names.training.map((m) => `training:${m}`)], [names]);
  const [choice, setChoice] = useState<string | null>(null);
  const key = choice ?? defaultMetricKey(options, searcherMetric);
  const [perBatch, setPerBatch] = useState(false);
  const [kind, metric] = key ? (key.split(/:(.*)/s) as ["training" | "validation", string]) : ["training" as const, ""];
  const batches = perBatch && kind === "training";
  const source = `${trial.id}:${kind}:${metric}:${batches}`;
  const fetcher = useCallback(async () => {
    const s = await api<Series>(`/ui/trials/${trial.id}/metrics?kind=${kind}&metric=${encodeURIComponent(metric)}&per_batch=${batches}&max_points=2000`);
    return { metric, kind, series: [s], source };
  }, [trial.id, kind, metric, batches, source]);
  const { data: loaded, error, load, update } = useLoaded(fetcher);
  const data = loaded?.source === source ? loaded : null;
  useEffect(() => {
    if (key) void load();
  }, [key, load]);
  // Live rows are whole workloads: a per-batch chart takes none (it reloads when toggled).
  const trialRef = useRef(trial);
  trialRef.current = trial;
  useEffect(() => {
    if (liveRows.length && !batches) update((d) => appendRows(d, liveRows, [trialRef.current]));
  }, [liveRows, batches, update]);
  if (!options.length) {
    return <p className="muted" data-testid="trial-chart-empty">{TERMINAL.has(trial.state)
      ? "No metrics: the trial ended before it reported any."
      : "No metrics yet: the chart shows them as the trial reports them."}</p>;
  }
  const s = data?.series[0];
  return (
    <section>
      <label>metric{" "}
        <select aria-label="trial metric" value={key ?? ""} onChange={(e) => setChoice(e.target.value)}>
          {options.map((o) => <option key={o} value={o}>{o.replace(":", ": ")}</option>)}
        </select>
      </label>{" "}
      <label><input type="checkbox" checked={perBatch} disabled={kind !== "training"} onChange={(e) => setPerBatch(e.target.checked)} /> per batch</label>
      {s && <LineChart testId="trial-chart" series={[{ label: metricLabel(kind, metric), xs: s.batches, ys: s.values, color: seriesColor(0) }]} xLabel={stepUnits(unit)} yLabel={metric} height={260}
        markers={kind === "validation" ? undefined : "last"} wholeX />}
      <ErrorLine error={error} />
    </section>
  );
}

/** A hyperparameter's value as the other tables show it (0.01124, not 0.011244503053070964),
 * the exact value on hover. */
function HparamValue({ value }: { value: unknown }) {
  if (typeof value === "number") {
    const shown = formatNumber(value);
    return shown === String(value) ? <>{shown}</> : <span title={String(value)}>{shown}</span>;
  }
  return <>{typeof value === "object" ? JSON.stringify(value) : String(value)}</>;
}
