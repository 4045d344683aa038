/** Many long line series on one canvas (uPlot), with a marker at each point (``markers:
 * "all"``, e.g. validations) or at each series' last point, so a one-point series shows. */
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { alignSeries } from "./align";
import { fitRange, formatNumber } from "../format";

export interface ChartSeries {
  label: string;
  xs: number[];
  ys: (number | null)[];
  color: string;
  highlight?: boolean;
  /** Stopped early (pruned) or failed: dashed line, hollow markers. */
  stopped?: boolean;
}

/** Series of at most this many points get a marker at each point (unless ``markers`` says
 * otherwise); longer ones only at their last point (a long run's hundreds of validations
 * drew a solid bar of dots). */
export const MARK_EVERY_POINT_UP_TO = 60;

/** Indices of the points that get a marker: every non-null point, or only the last one. */
export function markerIndices(ys: ArrayLike<number | null>, markers: "all" | "last"): number[] {
  const present: number[] = [];
  for (let i = 0; i < ys.length; i++) if (ys[i] != null && isFinite(ys[i] as number)) present.push(i);
  return markers === "all" ? present : present.slice(-1);
}

interface Props {
  series: ChartSeries[];
  xLabel: string;
  yLabel: string;
  logY?: boolean;
  height?: number;
  /** Called once the chart has drawn, with the milliseconds it took from data to pixels. */
  onDrawn?: (ms: number) => void;
  testId?: string;
  /** Which points get a marker (default: every point when series are short, else the last:
   * a trial with one validation still shows). */
  markers?: "all" | "last";
  /** The x values are whole numbers (steps: batches, epochs, records): ticks only at whole
   * numbers (uPlot's own put "4.5 epochs" and "0.92 batches" between them). */
  wholeX?: boolean;
}

/** A value in the hover legend, to 4 significant digits as the tables show it (uPlot's own
 * kept 3 decimals: a loss of 0.0004 read "0"); "--" away from the data, as uPlot shows. */
export function legendValue(v: number | null | undefined, hovering: boolean): string {
  if (!hovering) return "--";
  return v == null ? "" : formatNumber(v);
}

/** The x range uPlot asks for: the whole data with a margin when it autoscales (``min`` and
 * ``max`` span the data: at creation, new data, a double click), else the range the user
 * dragged to zoom in (the range function used to ignore it: dragging drew a box and did
 * nothing). */
export function xScaleRange(min: number | null, max: number | null, first: number | null, last: number | null, whole = false): [number, number] {
  if (min == null || max == null || first == null || last == null || (min <= first && max >= last)) return fitX(first, last, whole);
  return [min, max];
}

/** The x range that shows all the data. One step on a whole-number axis gets half a step
 * either side, so that its own tick is the only one (10% either side of epoch 12 had ticks
 * at 11 and 13: a 12-epoch trial looked as if it reached 13). */
export function fitX(first: number | null, last: number | null, whole = false): [number, number] {
  if (whole && first != null && first === last && isFinite(first)) return [first - 0.5, first + 0.5];
  return fitRange(first, last);
}

/** Tick increments for a whole-number axis: 1, 2, 5, 10, 20, 50, ... */
export const WHOLE_INCRS: number[] = Array.from({ length: 16 }, (_, k) => [1, 2, 5].map((m) => m * 10 ** k)).flat();

/** Ticks of a whole-number axis between ``min`` and ``max``: the multiples of ``incr``
 * (rounded up to a whole number, at least 1) in that range. */
export function wholeTicks(min: number, max: number, incr: number): number[] {
  const step = Math.max(1, Math.round(incr));
  const ticks: number[] = [];
  for (let v = Math.ceil(min / step) * step + 0; v <= max + 1e-9; v += step) ticks.push(v);  // + 0: not -0
  return ticks;
}

/** What a chart must be built anew for (series, their look, axes); a change in values
 * alone keeps the chart and updates its data, so hovering and zoom survive live metrics. */
export function chartShape(series: ChartSeries[], xLabel: string, yLabel: string, logY: boolean, height: number, mode: "all" | "last", wholeX = false): string {
  return JSON.stringify([series.map((s) => [s.label, s.color, !!s.highlight, !!s.stopped]), xLabel, yLabel, logY, height, mode, wholeX]);
}

export default function LineChart({ series, xLabel, yLabel, logY = false, height = 320, onDrawn, testId, markers, wholeX = false }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const drawnRef = useRef(onDrawn);
  drawnRef.current = onDrawn;
  const plotRef = useRef<{ plot: uPlot; shape: string; allX: ArrayLike<number>; marks: number[][] } | null>(null);
  useEffect(() => () => {
    plotRef.current?.plot.destroy();
    plotRef.current = null;
  }, []);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const t0 = performance.now();
    const data = alignSeries(series.map((s) => ({
      xs: s.xs,
      ys: logY ? s.ys.map((y) => (y != null && y > 0 ? y : null)) : s.ys,
    })));
    const anyHighlight = series.some((s) => s.highlight);
    const longest = Math.max(0, ...series.map((s) => s.xs.length));
    const mode = markers ?? (longest <= MARK_EVERY_POINT_UP_TO ? "all" : "last");
    const marks = series.map((_, i) => markerIndices(data[i + 1] as (number | null)[], mode));
    const allX = data[0] as ArrayLike<number>;
    const shape = chartShape(series, xLabel, yLabel, logY, height, mode, wholeX);
    const current = plotRef.current;
    if (current && current.shape === shape) {
      // Same chart, new values: a zoomed-in x range stays; otherwise it grows with the data.
      const { plot } = current;
      const old = current.allX;
      const fitted = fitX(old.length ? old[0] : null, old.length ? old[old.length - 1] : null, wholeX);
      const { min, max } = plot.scales.x;
      const zoomed = min != null && max != null && (min > fitted[0] + 1e-9 || max < fitted[1] - 1e-9);
      current.allX = allX;
      current.marks = marks;
      if (zoomed) {
        plot.setData(data as uPlot.AlignedData, false);
        plot.setScale("x", { min: min!, max: max! });
      } else {
        plot.setData(data as uPlot.AlignedData);
      }
    } else {
      current?.plot.destroy();
      const state = { allX, marks };
      const opts: uPlot.Options = {
        width: Math.max(300, el.clientWidth || 800),
        height,
        legend: { show: series.length <= 10 },
        cursor: { points: { show: false } },
        scales: {
          x: { time: false, range: (_u, min, max) => xScaleRange(min, max, state.allX.length ? state.allX[0] : null, state.allX.length ? state.allX[state.allX.length - 1] : null, wholeX) },
          y: logY ? { distr: 3 } : {},
        },
        axes: [wholeX ? {
          label: xLabel,
          incrs: WHOLE_INCRS,
          // The ticks drawn, for the tests.
          splits: (_u: uPlot, _i: number, min: number, max: number, incr: number) => {
            const ticks = wholeTicks(min, max, incr);
            el.dataset.xTicks = ticks.join(",");
            return ticks;
          },
        } : { label: xLabel }, { label: yLabel, size: 70 }],
        // The x range shown, for the browser tests (zoom, live data).
        hooks: { setScale: [(u, key) => {
          if (key === "x") el.dataset.xRange = `${u.scales.x.min},${u.scales.x.max}`;
        }] },
        series: [
          { label: xLabel },
          ...series.map((s, i) => ({
            label: s.label,
            value: (_u: uPlot, v: number | null, _si: number, di: number | null) => legendValue(v, di != null),
            stroke: s.color,
            width: s.highlight ? 3 : anyHighlight ? 1 : 1.5,
            dash: s.stopped ? [5, 4] : undefined,
            spanGaps: true,
            points: {
              show: true,
              size: s.highlight ? 9 : 7,
              width: 1.5,
              stroke: s.color,
              fill: s.stopped ? "#fff" : s.color,
              space: 0,
              filter: () => state.marks[i],
            },
          })),
        ],
      };
      const plot = new uPlot(opts, data as uPlot.AlignedData, el);
      // The options read allX and marks through ``state``, which later updates replace.
      plotRef.current = Object.assign(state, { plot, shape });
    }
    el.dataset.series = String(series.length);
    el.dataset.points = String(series.reduce((n, s) => n + s.xs.length, 0));
    el.dataset.markers = String(marks.reduce((n, m) => n + m.length, 0));
    el.dataset.stopped = String(series.filter((s) => s.stopped).length);
    drawnRef.current?.(performance.now() - t0);
  }, [series, xLabel, yLabel, logY, height, markers, wholeX]);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const resize = () => plotRef.current?.plot.setSize({ width: Math.max(300, el.clientWidth), height });
    window.addEventListener("resize", resize);
    return () => window.removeEventListener("resize", resize);
  }, [height]);
  return <div className="chart" ref={box} data-testid={testId ?? "line-chart"} />;
}
