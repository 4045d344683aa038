/** Learning curves of one metric for many trials: trial picker, log scale, smoothing, x axis. */
import { useCallback, useEffect, useMemo, useState } from "react";
import { api, type MetricRow, type Series, type Trial } from "../api";
import { seriesColor, smooth, stepUnits, stoppedTrials, trialNote } from "../format";
import LineChart, { MARK_EVERY_POINT_UP_TO, type ChartSeries } from "./LineChart";
import { useLoaded } from "../loaded";

export type XAxis = "batches" | "records" | "time";

export interface CurveData {
  metric: string;
  kind: "training" | "validation";
  series: Series[];
}

/** Appends live metric rows to the series they belong to (a new trial gets a series). */
export function appendRows<D extends CurveData>(data: D, rows: MetricRow[], trials: Trial[]): D {
  let changed = false;
  const byTrial = new Map(data.series.map((s) => [s.trial_id, s]));
  const next = new Map<number, Series>();
  for (const r of rows) {
    if (r.kind !== data.kind) continue;
    const v = r.metrics[data.metric];
    if (typeof v !== "number") continue;
    let s = next.get(r.trial_id) ?? byTrial.get(r.trial_id);
    const trial = trials.find((t) => t.id === r.trial_id);
    const start = trial?.start_time ? new Date(trial.start_time).getTime() / 1000 : r.end_time;
    if (!s) s = { trial_id: r.trial_id, batches: [], values: [], time: [], count: 0, records_per_batch: trial?.records_per_batch };
    if (s.batches.length && s.batches[s.batches.length - 1] >= r.total_batches) continue;
    s = { ...s, batches: [...s.batches, r.total_batches], values: [...s.values, v], time: [...s.time, r.end_time - start], count: s.count + 1 };
    next.set(r.trial_id, s);
    changed = true;
  }
  if (!changed) return data;
  const series = data.series.map((s) => next.get(s.trial_id) ?? s);
  for (const [id, s] of next) if (!byTrial.has(id)) series.push(s);
  return { ...data, series };
}

export function xValues(s: Series, axis: XAxis): number[] {
  if (axis === "time") return s.time;
  if (axis === "records") return s.batches.map((b) => b * (s.records_per_batch ?? 1));
  return s.batches;
}

interface Props {
  data: CurveData | null;
  trials: Trial[];
  bestTrialId: number | null;
  onDrawn?: (ms: number) => void;
  testId?: string;
  /** What the trials' steps count (the experiment's `step_unit`): the x axis names it. */
  unit?: string;
}

/** What the line styles mean. */
export function CurveLegend() {
  return (
    <div className="curve-legend" data-testid="curve-legend">
      <span><svg width="28" height="10"><line x1="0" y1="5" x2="28" y2="5" stroke="#446" strokeWidth="1.5" /><circle cx="14" cy="5" r="3.5" fill="#446" /></svg> running or ran to the end</span>
      <span><svg width="28" height="10"><line x1="0" y1="5" x2="28" y2="5" stroke="#446" strokeWidth="1.5" strokeDasharray="5 4" /><circle cx="14" cy="5" r="3.5" fill="#fff" stroke="#446" strokeWidth="1.5" /></svg> stopped early (pruned), failed or canceled</span>
      <span><svg width="28" height="10"><line x1="0" y1="5" x2="28" y2="5" stroke="#000" strokeWidth="3" /></svg> best trial</span>
      <span className="muted">a marker at each trial's last point, and at every validation on curves of up to {MARK_EVERY_POINT_UP_TO} points</span>
    </div>
  );
}

export default function Curves({ data, trials, bestTrialId, onDrawn, testId = "learning-curves", unit }: Props) {
  const [axis, setAxis] = useState<XAxis>("batches");
  const [logY, setLogY] = useState(false);
  const [smoothing, setSmoothing] = useState(0);
  const [hidden, setHidden] = useState<Set<number>>(new Set());
  const ids = useMemo(() => (data?.series ?? []).map((s) => s.trial_id), [data]);
  const stopped = useMemo(() => stoppedTrials(trials), [trials]);
  const steps = stepUnits(unit);
  // Records are batches times the batch size: a script's steps (epochs...) have no such axis.
  const byRecords = steps === "batches";
  const shown: XAxis = axis === "records" && !byRecords ? "batches" : axis;
  const series: ChartSeries[] = useMemo(() => {
    if (!data) return [];
    return data.series
      .filter((s) => !hidden.has(s.trial_id))
      .map((s) => ({
        label: `trial ${s.trial_id}`,
        xs: xValues(s, shown),
        ys: smooth(s.values, smoothing),
        color: s.trial_id === bestTrialId ? "#000" : seriesColor(ids.indexOf(s.trial_id)),
        highlight: s.trial_id === bestTrialId,
        stopped: stopped.has(s.trial_id),
      }));
  }, [data, hidden, shown, smoothing, bestTrialId, ids, stopped]);
  if (!data) return <p className="muted">Loading metrics…</p>;
  const stateOf = new Map(trials.map((t) => [t.id, t.state]));
  return (
    <div className="curves">
      <div className="controls">
        <label>x axis{" "}
          <select aria-label="x axis" value={shown} onChange={(e) => setAxis(e.target.value as XAxis)}>
            <option value="batches">{steps}</option>
            {byRecords && <option value="records">records</option>}
            <option value="time">time (s)</option>
          </select>
        </label>
        <label><input type="checkbox" aria-label="log scale" checked={logY} onChange={(e) => setLogY(e.target.checked)} /> log scale</label>
        <label>smoothing{" "}
          <input type="range" aria-label="smoothing" min={0} max={0.99} step={0.01} value={smoothing} onChange={(e) => setSmoothing(Number(e.target.value))} />
          {" "}{smoothing.toFixed(2)}
        </label>
      </div>
      <div className="chart-and-picker">
        <div className="chart-box">
          <LineChart series={series} xLabel={shown === "batches" ? steps : shown} yLabel={data.metric} logY={logY} onDrawn={onDrawn} testId={testId}
            markers={data.kind === "validation" ? undefined : "last"} wholeX={shown !== "time"} />
          <CurveLegend />
        </div>
        <div className="picker" data-testid="trial-picker">
          <div>
            <button className="link" onClick={() => setHidden(new Set())}>all</button> ·{" "}
            <button className="link" onClick={() => setHidden(new Set(ids))}>none</button>
            {bestTrialId != null && <> · <button className="link" onClick={() => setHidden(new Set(ids.filter((i) => i !== bestTrialId)))}>best</button></>}
          </div>
          {ids.map((id, i) => (
            <label key={id} className={id === bestTrialId ? "best" : ""}>
              <input type="checkbox" checked={!hidden.has(id)} onChange={(e) => {
                const h = new Set(hidden);
                if (e.target.checked) h.delete(id); else h.add(id);
                setHidden(h);
              }} />
              <span className="swatch" style={{ background: id === bestTrialId ? "#000" : seriesColor(i) }} />
              trial {id}{id === bestTrialId ? " ★ best" : ""} <small className="muted">{trialNote(stateOf.get(id) ?? "", stopped.has(id))}</small>
            </label>
          ))}
        </div>
      </div>
    </div>
  );
}

/** Fetches a metric's curves for every trial of an experiment (downsampled on the server);
 * ``update`` appends live rows, also to an answer still on its way. */
export function useExperimentCurves(experimentId: number, kind: "training" | "validation", metric: string | null) {
  const source = `${experimentId}:${kind}:${metric}`;
  const fetcher = useCallback(async (): Promise<CurveData & { source: string }> => {
    const r = await api<{ series: Series[] }>(
      `/ui/experiments/${experimentId}/metrics?kind=${kind}&metric=${encodeURIComponent(metric ?? "")}&max_points=2000`,
    );
    return { metric: metric ?? "", kind, series: r.series, source };
  }, [experimentId, kind, metric, source]);
  const { data, error, load, update } = useLoaded(fetcher);
  useEffect(() => {
    if (metric) void load();
  }, [metric, load]);
  // Until the chosen curves come, the previous ones (another metric's) are not shown.
  return { data: data?.source === source ? data : null, update, error };
}
