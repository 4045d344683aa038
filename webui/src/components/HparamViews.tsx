/** Hyperparameter views (SVG): parallel coordinates with brushing, slice plots (metric
 * against each hyperparameter), a contour plot of two hyperparameters, and importance.
 * Every axis has ticks; hyperparameters of type ``log`` get log axes; hovering a line or
 * point shows the trial's hyperparameters and metric. */
import { useEffect, useMemo, useRef, useState, type MouseEvent as ReactMouseEvent, type ReactNode, type SVGProps } from "react";
import { formatNumber } from "../format";

export interface HpPoint {
  trialId: number;
  hparams: Record<string, unknown>;
  metric: number | null;
}

export interface Axis {
  name: string;
  categorical: boolean;
  categories: string[];
  log: boolean;
  min: number;
  max: number;
}

/** An axis for each hyperparameter, numeric (log when the config says ``type: log``) or categorical. */
export function buildAxes(points: HpPoint[], names: string[], logNames: Set<string>): Axis[] {
  const axes: Axis[] = [];
  for (const name of names) {
    const values = points.map((p) => p.hparams[name]).filter((v) => v !== undefined);
    const numeric = values.length > 0 && values.every((v) => typeof v === "number");
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

export function metricAxis(name: string, values: number[]): Axis {
  return { name, categorical: false, categories: [], log: false, min: Math.min(...values), max: Math.max(...values) };
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

export interface Tick {
  pos: number;
  label: string;
}

function niceStep(span: number, count: number): number {
  const raw = span / Math.max(1, count);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / mag;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

/** Ticks for an axis: every category; round numbers (about ``count``); on a log axis the
 * powers of ten inside it, with 2 and 5 times them when it spans less than two decades.
 * The axis's ends are always labelled. */
export function axisTicks(axis: Axis, count = 5): Tick[] {
  if (axis.categorical) return axis.categories.map((c) => ({ pos: axisPosition(axis, c), label: c }));
  if (axis.min === axis.max) return [{ pos: 0.5, label: formatNumber(axis.min, 3) }];
  const values: number[] = [];
  if (axis.log) {
    const lo = Math.floor(Math.log10(axis.min));
    const hi = Math.ceil(Math.log10(axis.max));
    const mults = hi - lo <= 2 ? [1, 2, 5] : [1];
    for (let e = lo; e <= hi; e++) for (const m of mults) values.push(m * Math.pow(10, e));
  } else {
    const step = niceStep(axis.max - axis.min, count);
    for (let v = Math.ceil(axis.min / step) * step; v <= axis.max + step * 1e-9; v += step) values.push(Number(v.toPrecision(12)));
  }
  const eps = (axis.max - axis.min) * 1e-9;
  const inside = values.filter((v) => v >= axis.min - eps && v <= axis.max + eps);
  const ticks = inside.map((v) => ({ pos: axisPosition(axis, v), label: formatNumber(v, 3) }));
  // The ends, labelled; round ticks too close to an end give way so labels do not overlap.
  let out = ticks;
  for (const [end, pos] of [[axis.min, 0], [axis.max, 1]] as const) {
    if (out.some((t) => Math.abs(t.pos - pos) < 1e-6)) continue;
    out = out.filter((t) => Math.abs(t.pos - pos) >= 0.08);
    out.push({ pos, label: formatNumber(end, 3) });
  }
  return out.sort((a, b) => a.pos - b.pos);
}

/** The ticks of a horizontal numeric axis ``length`` pixels long whose labels do not
 * overlap: the ends stay, and a round tick whose label would touch a kept one's gives way
 * (a label is about ``charPx`` pixels a character, centred on its tick). The fixed
 * distance axisTicks keeps from the ends suits the tall parallel-coordinates axes, not
 * labels side by side (a slice plot's 0.05 ran into its end label 0.0646). */
export function spacedTicks(ticks: Tick[], length: number, charPx = 6.4, gapPx = 6): Tick[] {
  const half = (t: Tick) => (t.label.length * charPx) / 2;
  const isEnd = (t: Tick) => t.pos <= 1e-6 || t.pos >= 1 - 1e-6;
  const kept = ticks.filter(isEnd);
  for (const t of ticks) {
    if (!isEnd(t) && kept.every((k) => Math.abs(k.pos - t.pos) * length >= half(k) + half(t) + gapPx)) kept.push(t);
  }
  return kept.sort((a, b) => a.pos - b.pos);
}

function metricColor(t: number): string {
  // good (t=0) green -> bad (t=1) red
  const hue = 120 - 120 * Math.min(1, Math.max(0, t));
  return `hsl(${hue}, 70%, 42%)`;
}

/** Brushes: per axis name, a [low, high] range of positions in [0, 1]. */
export type Brushes = Record<string, [number, number]>;

/** Whether a trial's line passes through every brush (the last axis is the metric's). */
export function inBrushes(p: HpPoint, axes: Axis[], brushes: Brushes): boolean {
  return axes.every((a, i) => {
    const b = brushes[a.name];
    if (!b) return true;
    const t = axisPosition(a, i === axes.length - 1 ? p.metric : p.hparams[a.name]);
    return t >= b[0] - 1e-9 && t <= b[1] + 1e-9;
  });
}

interface Props {
  points: HpPoint[];
  names: string[];
  logNames: Set<string>;
  metricName: string;
  smallerIsBetter: boolean;
  bestTrialId?: number | null;
  experimentId?: number;
}

interface Hover {
  x: number;
  y: number;
  point: HpPoint;
}

/** The hover box: a trial's hyperparameters and metric. */
function Tooltip({ hover, names, metricName }: { hover: Hover | null; names: string[]; metricName: string }) {
  if (!hover) return null;
  const p = hover.point;
  const lines = [`trial ${p.trialId}`, `${metricName}: ${formatNumber(p.metric)}`, ...names.map((n) => `${n}: ${formatNumber(p.hparams[n])}`)];
  return <div className="hp-tooltip" data-testid="hp-tooltip" style={{ left: hover.x + 12, top: hover.y + 12 }}>{lines.join("\n")}</div>;
}

function hoverAt(e: ReactMouseEvent, point: HpPoint): Hover {
  const box = (e.currentTarget as Element).closest(".hp-box")!.getBoundingClientRect();
  return { x: e.clientX - box.left, y: e.clientY - box.top, point };
}

/** About how many pixels a character of a tick label (10 px) and of an axis title (11 px,
 * bold) takes: a little more than most do, so that estimated room is real room. */
export const TICK_CHAR_PX = 6.2;
export const TITLE_CHAR_PX = 7;

/** ``text`` cut to about ``maxPx`` pixels with an ellipsis (keeping at least its first
 * character); whole when it fits. */
export function fitText(text: string, maxPx: number, charPx: number): string {
  const room = Math.floor(maxPx / charPx);
  if (text.length <= room) return text;
  return `${text.slice(0, Math.max(1, room - 1))}…`;
}

/** SVG text cut to ``maxPx`` pixels; a cut one shows its whole text on hover (its
 * ``<title>``) and keeps it in ``data-full``. */
function SvgLabel({ text, maxPx, charPx, ...attrs }: { text: string; maxPx: number; charPx: number } & SVGProps<SVGTextElement>) {
  const shown = fitText(text, maxPx, charPx);
  if (shown === text) return <text {...attrs}>{text}</text>;
  return <text {...attrs} data-full={text}><title>{text}</title>{shown}</text>;
}

/** The room of labels side by side at ``xs`` (ascending) inside ``[lo, hi]``: each one's
 * span reaches halfway to its neighbours, less ``gap`` between them. */
export function labelRooms(xs: number[], lo: number, hi: number, gap = 6): [number, number][] {
  return xs.map((x, i) => [
    i > 0 ? (xs[i - 1] + x) / 2 + gap / 2 : lo,
    i + 1 < xs.length ? (x + xs[i + 1]) / 2 - gap / 2 : hi,
  ]);
}

/** Where a label about ``width`` pixels wide, centred at ``x`` where it can be, goes to stay
 * inside ``[lo, hi]``. */
function centreWithin(x: number, width: number, lo: number, hi: number): number {
  return Math.min(Math.max(x, lo + width / 2), Math.max(lo + width / 2, hi - width / 2));
}

/** An axis's tick labels. A vertical axis's category names are cut to ``maxPx`` (labels
 * left of an axis ran into the axis before it). A horizontal axis ``length`` pixels long
 * has its labels side by side, inside ``bounds`` (its picture's edges cut them): round
 * numbers that would overlap give way, and each category name is cut to its share. */
function AxisTicks({ axis, place, length, bounds, maxPx = Infinity }: {
  axis: Axis;
  place: (t: number) => { x: number; y: number; anchor: "start" | "end" | "middle" };
  length?: number;
  bounds?: [number, number];
  maxPx?: number;
}): ReactNode {
  const ticks = axisTicks(axis);
  const shown = length == null || axis.categorical ? ticks : spacedTicks(ticks, length);
  const [lo, hi] = bounds ?? [-Infinity, Infinity];
  const places = shown.map((t) => place(t.pos));
  const horizontal = length != null && places.every((p) => p.anchor === "middle");
  // Side by side, a category name keeps to its share of the axis; a number (spaced
  // already) only to the picture.
  const rooms = horizontal && axis.categorical ? labelRooms(places.map((p) => p.x), lo, hi) : shown.map((): [number, number] => [lo, hi]);
  return shown.map((t, i) => {
    const p = places[i];
    const [from, to] = rooms[i];
    const room = axis.categorical ? Math.min(maxPx, to - from) : Infinity;
    const text = fitText(t.label, room, TICK_CHAR_PX);
    const x = horizontal ? centreWithin(p.x, text.length * TICK_CHAR_PX, from, to) : p.x;
    return <SvgLabel key={`${t.label}-${t.pos}`} text={t.label} maxPx={room} charPx={TICK_CHAR_PX} x={x} y={p.y} textAnchor={p.anchor} className="tick" />;
  });
}

/** The axis titles of a parallel-coordinates chart: where each title goes (``x``, centre)
 * and how many pixels it may take (``maxPx``), on one row when every title fits between its
 * neighbours (``xs``: the axes' positions; ``width``: the chart's), else on two (alternate
 * axes), each title taking up to the room its two neighbours on its row leave, cut to it.
 * With many long names the titles ran into each other. */
export function axisTitleLayout(titles: string[], xs: number[], width: number, charPx = TITLE_CHAR_PX): { rows: 1 | 2; row: number[]; x: number[]; maxPx: number[] } {
  const place = (step: number) => titles.map((t, i) => {
    // The room between this title's neighbours on its row (every ``step``-th axis).
    const row = xs.filter((_, j) => j % step === i % step);
    const [left, right] = labelRooms(row, 2, width - 2)[Math.floor(i / step)];
    const maxPx = Math.max(charPx, right - left);
    const shown = fitText(t, maxPx, charPx).length * charPx;
    return { x: centreWithin(xs[i], shown, left, right), maxPx, fits: t.length * charPx <= maxPx };
  });
  const one = place(1);
  const layout = one.every((p) => p.fits) ? one : place(2);
  const rows = layout === one ? 1 : 2;
  return { rows, row: titles.map((_, i) => (rows === 2 ? i % 2 : 0)), x: layout.map((p) => p.x), maxPx: layout.map((p) => p.maxPx) };
}

/** The parallel-coordinates chart's width: 150 pixels an axis (at least 520), narrowed to
 * ``box`` (the width of its box less the chart's border; 0: not measured yet) down to 80
 * pixels an axis, where it scrolls in its box. */
export function parcoordsWidth(axisCount: number, box: number): number {
  const ideal = Math.max(520, axisCount * 150);
  if (box <= 0) return ideal;
  return Math.round(Math.min(ideal, Math.max(axisCount * 80, box - 2)));
}

/** The inner width of the element given ``ref``, kept current as it resizes (0 until
 * measured, and where the browser cannot observe sizes). */
function useBoxWidth<T extends HTMLElement>() {
  const [el, ref] = useState<T | null>(null); // a callback ref: the box may show later
  const [width, setWidth] = useState(0);
  useEffect(() => {
    if (!el || typeof ResizeObserver === "undefined") return;
    const measure = () => setWidth(el.clientWidth);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, [el]);
  return { ref, width };
}

export function ParallelCoordinates({ points, names, logNames, metricName, smallerIsBetter, bestTrialId }: Props) {
  const [hover, setHover] = useState<Hover | null>(null);
  const [brushes, setBrushes] = useState<Brushes>({});
  const [drag, setDragState] = useState<{ axis: string; from: number; to: number } | null>(null);
  // The drag as of the latest event (mouse events may come faster than renders).
  const dragRef = useRef(drag);
  const setDrag = (d: typeof drag) => {
    dragRef.current = d;
    setDragState(d);
  };
  const withMetric = useMemo(() => points.filter((p) => p.metric != null && isFinite(p.metric)), [points]);
  const mAxis = useMemo(() => metricAxis(metricName, withMetric.map((p) => p.metric as number)), [withMetric, metricName]);
  const axes = useMemo(() => [...buildAxes(points, names, logNames), mAxis], [points, names, logNames, mAxis]);
  const box = useBoxWidth<HTMLDivElement>();
  if (!withMetric.length) return <p className="muted">No trial has reported {metricName} yet.</p>;
  const W = parcoordsWidth(axes.length, box.width);
  const H = 320;
  const titles = axes.map((a) => `${a.name}${a.log ? " (log)" : ""}`);
  const spread = (l: number, r: number) => axes.map((_, i) => l + (i * (W - l - r)) / Math.max(1, axes.length - 1));
  const titleAt = axisTitleLayout(titles, spread(50, 70), W);
  const pad = { l: 50, r: 70, t: titleAt.rows === 2 ? 44 : 30, b: 20 };
  const xs = spread(pad.l, pad.r);
  const x = (i: number) => xs[i];
  const y = (t: number) => pad.t + (1 - t) * (H - pad.t - pad.b);
  const tOf = (clientY: number, svg: SVGSVGElement) => {
    const r = svg.getBoundingClientRect();
    return Math.min(1, Math.max(0, 1 - (clientY - r.top - pad.t) / (H - pad.t - pad.b)));
  };
  const colorOf = (m: number) => {
    const t = axisPosition(mAxis, m);
    return metricColor(smallerIsBetter ? t : 1 - t);
  };
  const selected = withMetric.filter((p) => inBrushes(p, axes, brushes));
  const brushing = Object.keys(brushes).length > 0;
  return (
    <div className="hp-box" ref={box.ref}>
      <p className="muted">
        Drag along an axis to keep only the trials inside the range (several axes combine); click an axis to clear its range.
        {brushing ? <> {selected.length} of {withMetric.length} trials selected · <button className="link" onClick={() => setBrushes({})}>clear all</button></> : null}
      </p>
      <svg className="parcoords" width={W} height={H} data-testid="parallel-coordinates" data-selected={selected.length}
        onMouseMove={(e) => dragRef.current && setDrag({ ...dragRef.current, to: tOf(e.clientY, e.currentTarget) })}
        onMouseUp={(e) => {
          const drag = dragRef.current && { ...dragRef.current, to: tOf(e.clientY, e.currentTarget) };
          if (!drag) return;
          const lo = Math.min(drag.from, drag.to);
          const hi = Math.max(drag.from, drag.to);
          const next = { ...brushes };
          if (hi - lo < 0.01) delete next[drag.axis]; else next[drag.axis] = [lo, hi];
          setBrushes(next);
          setDrag(null);
        }}
        onMouseLeave={() => setDrag(null)}>
        {withMetric.map((p) => {
          const d = axes
            .map((a, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(axisPosition(a, i === axes.length - 1 ? p.metric : p.hparams[a.name])).toFixed(1)}`)
            .join("");
          const inside = !brushing || selected.includes(p);
          const strong = hover?.point.trialId === p.trialId || bestTrialId === p.trialId;
          return (
            <g key={p.trialId}>
              <path d={d} fill="none" data-trial={p.trialId} className={inside ? "line in" : "line out"}
                stroke={inside ? colorOf(p.metric as number) : "#bbb"}
                strokeWidth={strong ? 3 : 1.4}
                strokeOpacity={!inside ? 0.15 : hover == null || strong ? 0.9 : 0.3} pointerEvents="none" />
              {/* a wider invisible stroke: easy to hover */}
              <path d={d} fill="none" stroke="transparent" strokeWidth={8} className="line-hit"
                onMouseMove={(e) => setHover(hoverAt(e, p))}
                onMouseLeave={() => setHover(null)} />
            </g>
          );
        })}
        {axes.map((a, i) => {
          const b = drag?.axis === a.name ? [Math.min(drag.from, drag.to), Math.max(drag.from, drag.to)] : brushes[a.name];
          return (
            <g key={a.name} data-axis={a.name}>
              <line x1={x(i)} x2={x(i)} y1={y(0)} y2={y(1)} stroke="#555" />
              <SvgLabel text={titles[i]} maxPx={titleAt.maxPx[i]} charPx={TITLE_CHAR_PX} x={titleAt.x[i]} y={16 + 14 * titleAt.row[i]}
                textAnchor="middle" className="axis-title" />
              <AxisTicks axis={a} place={(t) => ({ x: x(i) - 5, y: y(t) + 3, anchor: "end" })} maxPx={i ? x(i) - x(i - 1) - 10 : x(i) - 7} />
              {axisTicks(a).map((t) => <line key={t.pos} x1={x(i) - 3} x2={x(i)} y1={y(t.pos)} y2={y(t.pos)} stroke="#555" />)}
              {b && <rect className="brush" x={x(i) - 7} width={14} y={y(b[1])} height={Math.max(1, y(b[0]) - y(b[1]))} />}
              <rect className="brush-handle" data-testid={`brush-${a.name}`} x={x(i) - 10} width={20} y={y(1)} height={y(0) - y(1)} fill="transparent"
                style={{ cursor: "ns-resize" }}
                onMouseDown={(e) => { e.preventDefault(); const t = tOf(e.clientY, e.currentTarget.ownerSVGElement!); setDrag({ axis: a.name, from: t, to: t }); }} />
            </g>
          );
        })}
      </svg>
      <Tooltip hover={hover} names={names} metricName={metricName} />
    </div>
  );
}

/** Slice plots: the metric against each hyperparameter, one small plot per hyperparameter. */
export function SlicePlots({ points, names, logNames, metricName, smallerIsBetter, bestTrialId }: Props) {
  const [hover, setHover] = useState<Hover | null>(null);
  const withMetric = points.filter((p) => p.metric != null && isFinite(p.metric));
  if (!withMetric.length) return null;
  const mAxis = metricAxis(metricName, withMetric.map((p) => p.metric as number));
  const axes = buildAxes(points, names, logNames);
  const W = 280;
  const H = 210;
  const pad = { l: 56, r: 12, t: 20, b: 40 };
  const px = (t: number) => pad.l + 6 + t * (W - pad.l - pad.r - 12);
  const py = (t: number) => pad.t + (1 - t) * (H - pad.t - pad.b);
  return (
    <div className="scatters hp-box" data-testid="slice-plots">
      {axes.map((a) => (
        <svg key={a.name} width={W} height={H} className="scatter" data-hparam={a.name}>
          <text x={W / 2 + 20} y={H - 4} textAnchor="middle" className="axis-title">{a.name}{a.log ? " (log)" : ""}</text>
          <text x={4} y={12} className="axis-title">{metricName}</text>
          <rect x={pad.l} y={pad.t} width={W - pad.l - pad.r} height={H - pad.t - pad.b} fill="none" stroke="#ccc" />
          <AxisTicks axis={mAxis} place={(t) => ({ x: pad.l - 4, y: py(t) + 3, anchor: "end" })} />
          <AxisTicks axis={a} place={(t) => ({ x: px(t), y: H - pad.b + 13, anchor: "middle" })} length={W - pad.l - pad.r - 12} bounds={[2, W - 2]} />
          {withMetric.map((p) => {
            const t = axisPosition(mAxis, p.metric);
            return (
              <circle key={p.trialId} cx={px(axisPosition(a, p.hparams[a.name]))} cy={py(t)} r={p.trialId === bestTrialId ? 5 : 3.5}
                fill={metricColor(smallerIsBetter ? t : 1 - t)} stroke={p.trialId === bestTrialId ? "#000" : "none"}
                onMouseMove={(e) => setHover(hoverAt(e, p))} onMouseLeave={() => setHover(null)} />
            );
          })}
        </svg>
      ))}
      <Tooltip hover={hover} names={names} metricName={metricName} />
    </div>
  );
}

/** The metric on an ``n`` x ``n`` grid of positions in [0, 1]^2, interpolated from the
 * trials by inverse-distance weighting (power 2): cheap, exact at the trials, and it never
 * invents values outside the trials' range. Row 0 is the bottom (y = 0). */
export function contourGrid(samples: { x: number; y: number; v: number }[], n: number): number[][] {
  const grid: number[][] = [];
  for (let j = 0; j < n; j++) {
    const row: number[] = [];
    for (let i = 0; i < n; i++) {
      const gx = (i + 0.5) / n;
      const gy = (j + 0.5) / n;
      let num = 0;
      let den = 0;
      let exact: number | null = null;
      for (const s of samples) {
        const d2 = (s.x - gx) ** 2 + (s.y - gy) ** 2;
        if (d2 < 1e-12) {
          exact = s.v;
          break;
        }
        num += s.v / d2;
        den += 1 / d2;
      }
      row.push(exact ?? num / den);
    }
    grid.push(row);
  }
  return grid;
}

/** A contour plot of the metric over two hyperparameters (chosen in two menus). */
export function ContourPlot({ points, names, logNames, metricName, smallerIsBetter, bestTrialId }: Props) {
  const [xName, setX] = useState(names[0]);
  const [yName, setY] = useState(names[1] ?? names[0]);
  const [hover, setHover] = useState<Hover | null>(null);
  const withMetric = points.filter((p) => p.metric != null && isFinite(p.metric) && p.hparams[xName] !== undefined && p.hparams[yName] !== undefined);
  if (names.length < 2) return <p className="muted">A contour plot needs two hyperparameters that vary.</p>;
  if (!withMetric.length) return null;
  const [ax, ay] = buildAxes(withMetric, [xName, yName], logNames);
  const mAxis = metricAxis(metricName, withMetric.map((p) => p.metric as number));
  const n = 24;
  const grid = contourGrid(withMetric.map((p) => ({ x: axisPosition(ax, p.hparams[xName]), y: axisPosition(ay, p.hparams[yName]), v: p.metric as number })), n);
  const S = 320;
  const pad = { l: 64, r: 16, t: 12, b: 44 };
  const side = S - pad.l - pad.r;
  const px = (t: number) => pad.l + t * side;
  const py = (t: number) => pad.t + (1 - t) * side;
  const colorOf = (v: number) => {
    const t = axisPosition(mAxis, v);
    return metricColor(smallerIsBetter ? t : 1 - t);
  };
  return (
    <div className="hp-box" data-testid="contour-plot">
      <label>x <select aria-label="contour x" value={xName} onChange={(e) => setX(e.target.value)}>{names.map((m) => <option key={m}>{m}</option>)}</select></label>{" "}
      <label>y <select aria-label="contour y" value={yName} onChange={(e) => setY(e.target.value)}>{names.map((m) => <option key={m}>{m}</option>)}</select></label>
      <br />
      <svg width={S + 90} height={pad.t + side + pad.b} className="scatter">
        {grid.map((row, j) => row.map((v, i) => (
          <rect key={`${i}-${j}`} x={px(i / n)} y={py((j + 1) / n)} width={side / n + 0.5} height={side / n + 0.5} fill={colorOf(v)} fillOpacity={0.55} />
        )))}
        <rect x={pad.l} y={pad.t} width={side} height={side} fill="none" stroke="#888" />
        <AxisTicks axis={ax} place={(t) => ({ x: px(t), y: pad.t + side + 13, anchor: "middle" })} length={side} bounds={[2, S + 88]} />
        <AxisTicks axis={ay} place={(t) => ({ x: pad.l - 4, y: py(t) + 3, anchor: "end" })} maxPx={pad.l - 22} />
        <text x={pad.l + side / 2} y={pad.t + side + 32} textAnchor="middle" className="axis-title">{xName}{ax.log ? " (log)" : ""}</text>
        <text x={10} y={pad.t + side / 2} className="axis-title" transform={`rotate(-90 10 ${pad.t + side / 2})`} textAnchor="middle">{yName}{ay.log ? " (log)" : ""}</text>
        {withMetric.map((p) => (
          <circle key={p.trialId} cx={px(axisPosition(ax, p.hparams[xName]))} cy={py(axisPosition(ay, p.hparams[yName]))}
            r={p.trialId === bestTrialId ? 5 : 3.5} fill={colorOf(p.metric as number)} stroke="#000" strokeWidth={p.trialId === bestTrialId ? 2 : 0.7}
            onMouseMove={(e) => setHover(hoverAt(e, p))} onMouseLeave={() => setHover(null)} />
        ))}
        <g transform={`translate(${S + 10}, ${pad.t})`}>
          <text x={0} y={-2} className="tick">{metricName}</text>
          {[0, 0.25, 0.5, 0.75, 1].map((t) => {
            const v = mAxis.min + t * (mAxis.max - mAxis.min);
            return (
              <g key={t}>
                <rect x={0} y={4 + (1 - t) * (side - 20)} width={12} height={(side - 20) / 4} fill={colorOf(v)} fillOpacity={0.55} />
                <text x={16} y={12 + (1 - t) * (side - 20)} className="tick">{formatNumber(v, 3)}</text>
              </g>
            );
          })}
        </g>
      </svg>
      <Tooltip hover={hover} names={[xName, yName]} metricName={metricName} />
    </div>
  );
}

export interface Importance {
  name: string;
  importance: number;
  share: number;
  /** Trials (with a validation) an estimate takes: one more than the groups of values. */
  needs?: number;
}

/** Whether ``row`` has an estimate from ``trials`` trials: with no more trials than groups
 * of values its ω² reads 0 for want of data, not for want of effect. */
export function estimable(row: Importance, trials: number): boolean {
  return row.needs == null || trials >= row.needs;
}

/** Importance bars (from ``GET /ui/experiments/{id}/hparam-importance``). */
export function ImportanceBars({ rows, metricName, trials }: { rows: Importance[]; metricName: string; trials: number }) {
  if (!rows.length) {
    return <p className="muted" data-testid="importance-empty">No estimate yet: it needs at least 3 trials that reported {metricName}, and {trials === 1 ? "1 has" : `${trials} have`}.</p>;
  }
  return (
    <div className="importance" data-testid="hparam-importance">
      <table className="table" style={{ width: "auto" }}>
        <thead><tr><th>Hyperparameter</th><th>Importance for {metricName}</th><th>ω²</th></tr></thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.name}>
              <td>{r.name}</td>
              {estimable(r, trials) ? (
                <>
                  <td><span className="bar" style={{ width: `${Math.round(r.share * 200)}px` }} /> {Math.round(r.share * 100)}%</td>
                  <td>{formatNumber(r.importance, 3)}</td>
                </>
              ) : (
                <>
                  <td className="muted" data-testid="importance-needs">no estimate yet: needs {r.needs} trials that reported {metricName}, {trials === 1 ? "1 has" : `${trials} have`}</td>
                  <td className="muted">–</td>
                </>
              )}
            </tr>
          ))}
        </tbody>
      </table>
      <p className="muted">
        Share of the metric's spread across {trials} trials that each hyperparameter explains on its own (ω², one-way analysis of
        variance over trials grouped by value, numbers in 5 equal-count bins; no interactions). An estimate needs one trial more
        than the hyperparameter has groups of values.
      </p>
    </div>
  );
}
