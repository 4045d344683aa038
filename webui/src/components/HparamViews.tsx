/** Hyperparameter views: parallel coordinates and metric-vs-hyperparameter scatters (SVG). */
import { useMemo, useState } from "react";
import { formatNumber } from "../format";

export interface HpPoint {
  trialId: number;
  hparams: Record<string, unknown>;
  metric: number | null;
}

interface Axis {
  name: string;
  categorical: boolean;
  categories: string[];
  log: boolean;
  min: number;
  max: number;
}

/** An axis for each hyperparameter that varies, numeric (log if positive over 2 decades) or categorical. */
export function buildAxes(points: HpPoint[], names: string[], logNames: Set<string>): Axis[] {
  const axes: Axis[] = [];
  for (const name of names) {
    const values = points.map((p) => p.hparams[name]);
    const numeric = values.every((v) => typeof v === "number");
    if (numeric) {
      const nums = values as number[];
      const min = Math.min(...nums);
      const max = Math.max(...nums);
      const log = logNames.has(name) && min > 0;
      axes.push({ name, categorical: false, categories: [], log, min, max });
    } else {
      const categories = [...new Set(values.map((v) => String(v)))].sort();
      axes.push({ name, categorical: true, categories, log: false, min: 0, max: Math.max(1, categories.length - 1) });
    }
  }
  return axes;
}

/** Position of ``v`` on ``axis`` in [0, 1]. */
export function axisPosition(axis: Axis, v: unknown): number {
  if (axis.categorical) {
    const i = axis.categories.indexOf(String(v));
    return axis.categories.length <= 1 ? 0.5 : i / (axis.categories.length - 1);
  }
  const x = Number(v);
  if (axis.max === axis.min) return 0.5;
  if (axis.log) return (Math.log(x) - Math.log(axis.min)) / (Math.log(axis.max) - Math.log(axis.min));
  return (x - axis.min) / (axis.max - axis.min);
}

function metricColor(t: number): string {
  // good (t=0) green -> bad (t=1) red
  const hue = 120 - 120 * Math.min(1, Math.max(0, t));
  return `hsl(${hue}, 70%, 42%)`;
}

interface Props {
  points: HpPoint[];
  names: string[];
  logNames: Set<string>;
  metricName: string;
  smallerIsBetter: boolean;
  bestTrialId?: number | null;
}

export function ParallelCoordinates({ points, names, logNames, metricName, smallerIsBetter, bestTrialId }: Props) {
  const [hover, setHover] = useState<number | null>(null);
  const withMetric = points.filter((p) => p.metric != null && isFinite(p.metric));
  const metricAxis: Axis = useMemo(() => {
    const ms = withMetric.map((p) => p.metric as number);
    return { name: metricName, categorical: false, categories: [], log: false, min: Math.min(...ms), max: Math.max(...ms) };
  }, [withMetric, metricName]);
  const axes = useMemo(() => [...buildAxes(points, names, logNames), metricAxis], [points, names, logNames, metricAxis]);
  if (!withMetric.length) return <p className="muted">No trial has reported {metricName} yet.</p>;
  const W = Math.max(480, axes.length * 140);
  const H = 300;
  const pad = { l: 40, r: 60, t: 30, b: 30 };
  const x = (i: number) => pad.l + (i * (W - pad.l - pad.r)) / Math.max(1, axes.length - 1);
  const y = (t: number) => pad.t + (1 - t) * (H - pad.t - pad.b);
  const colorOf = (m: number) => {
    const t = axisPosition(metricAxis, m);
    return metricColor(smallerIsBetter ? t : 1 - t);
  };
  return (
    <svg className="parcoords" width={W} height={H} data-testid="parallel-coordinates">
      {withMetric.map((p) => {
        const d = axes
          .map((a, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(axisPosition(a, i === axes.length - 1 ? p.metric : p.hparams[a.name])).toFixed(1)}`)
          .join("");
        const strong = hover === p.trialId || bestTrialId === p.trialId;
        return (
          <path
            key={p.trialId}
            d={d}
            fill="none"
            stroke={colorOf(p.metric as number)}
            strokeWidth={strong ? 3 : 1.2}
            strokeOpacity={hover == null || strong ? 0.9 : 0.25}
            onMouseEnter={() => setHover(p.trialId)}
            onMouseLeave={() => setHover(null)}
          >
            <title>{`trial ${p.trialId}: ${metricName} ${formatNumber(p.metric)}`}</title>
          </path>
        );
      })}
      {axes.map((a, i) => (
        <g key={a.name}>
          <line x1={x(i)} x2={x(i)} y1={y(0)} y2={y(1)} stroke="#555" />
          <text x={x(i)} y={16} textAnchor="middle" className="axis-title">{a.name}</text>
          {a.categorical
            ? a.categories.map((c) => (
                <text key={c} x={x(i) + 4} y={y(axisPosition(a, c)) + 4} className="tick">{c}</text>
              ))
            : [0, 1].map((t) => (
                <text key={t} x={x(i) + 4} y={y(t) + 4} className="tick">
                  {formatNumber(a.log ? Math.exp(Math.log(a.min) + t * (Math.log(a.max) - Math.log(a.min))) : a.min + t * (a.max - a.min), 3)}
                </text>
              ))}
        </g>
      ))}
    </svg>
  );
}

export function HparamScatters({ points, names, logNames, metricName, smallerIsBetter, bestTrialId }: Props) {
  const withMetric = points.filter((p) => p.metric != null && isFinite(p.metric));
  if (!withMetric.length) return null;
  const ms = withMetric.map((p) => p.metric as number);
  const mAxis: Axis = { name: metricName, categorical: false, categories: [], log: false, min: Math.min(...ms), max: Math.max(...ms) };
  const axes = buildAxes(points, names, logNames);
  const W = 260;
  const H = 200;
  const pad = { l: 50, r: 10, t: 20, b: 30 };
  return (
    <div className="scatters" data-testid="hparam-scatters">
      {axes.map((a) => (
        <svg key={a.name} width={W} height={H} className="scatter">
          <text x={W / 2} y={H - 6} textAnchor="middle" className="axis-title">{a.name}{a.log ? " (log)" : ""}</text>
          <text x={12} y={14} className="axis-title">{metricName}</text>
          <rect x={pad.l} y={pad.t} width={W - pad.l - pad.r} height={H - pad.t - pad.b} fill="none" stroke="#ccc" />
          <text x={pad.l - 4} y={pad.t + 8} textAnchor="end" className="tick">{formatNumber(mAxis.max, 3)}</text>
          <text x={pad.l - 4} y={H - pad.b} textAnchor="end" className="tick">{formatNumber(mAxis.min, 3)}</text>
          {withMetric.map((p) => {
            const px = pad.l + 6 + axisPosition(a, p.hparams[a.name]) * (W - pad.l - pad.r - 12);
            const py = pad.t + (1 - axisPosition(mAxis, p.metric)) * (H - pad.t - pad.b);
            const t = axisPosition(mAxis, p.metric);
            return (
              <circle key={p.trialId} cx={px} cy={py} r={p.trialId === bestTrialId ? 5 : 3.5}
                fill={metricColor(smallerIsBetter ? t : 1 - t)} stroke={p.trialId === bestTrialId ? "#000" : "none"}>
                <title>{`trial ${p.trialId}: ${a.name}=${String(p.hparams[a.name])}, ${metricName} ${formatNumber(p.metric)}`}</title>
              </circle>
            );
          })}
        </svg>
      ))}
    </div>
  );
}
