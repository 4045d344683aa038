/** Many long line series on one canvas (uPlot), with a marker at each point (``markers:
 * "all"``, e.g. validations) or at each series' last point, so a one-point series shows. */
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { alignSeries } from "./align";
import { fitRange } from "../format";

export interface ChartSeries {
  label: string;
  xs: number[];
  ys: (number | null)[];
  color: string;
  highlight?: boolean;
  /** Stopped early (pruned) or failed: dashed line, hollow markers. */
  stopped?: boolean;
}

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
  /** Which points get a marker (default: every point when series are short, else the last). */
  markers?: "all" | "last";
}

export default function LineChart({ series, xLabel, yLabel, logY, height = 320, onDrawn, testId, markers }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const drawnRef = useRef(onDrawn);
  drawnRef.current = onDrawn;
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
    const mode = markers ?? (longest <= 60 ? "all" : "last");
    const marks = series.map((_, i) => markerIndices(data[i + 1] as (number | null)[], mode));
    const allX = data[0] as ArrayLike<number>;
    const opts: uPlot.Options = {
      width: Math.max(300, el.clientWidth || 800),
      height,
      legend: { show: series.length <= 10 },
      cursor: { points: { show: false } },
      scales: {
        x: { time: false, range: () => fitRange(allX.length ? allX[0] : null, allX.length ? allX[allX.length - 1] : null) },
        y: logY ? { distr: 3 } : {},
      },
      axes: [{ label: xLabel }, { label: yLabel, size: 70 }],
      series: [
        { label: xLabel },
        ...series.map((s, i) => ({
          label: s.label,
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
            filter: () => marks[i],
          },
        })),
      ],
    };
    const plot = new uPlot(opts, data as uPlot.AlignedData, el);
    el.dataset.series = String(series.length);
    el.dataset.points = String(series.reduce((n, s) => n + s.xs.length, 0));
    el.dataset.markers = String(marks.reduce((n, m) => n + m.length, 0));
    el.dataset.stopped = String(series.filter((s) => s.stopped).length);
    drawnRef.current?.(performance.now() - t0);
    const resize = () => plot.setSize({ width: Math.max(300, el.clientWidth), height });
    window.addEventListener("resize", resize);
    return () => {
      window.removeEventListener("resize", resize);
      plot.destroy();
    };
  }, [series, xLabel, yLabel, logY, height, markers]);
  return <div className="chart" ref={box} data-testid={testId ?? "line-chart"} />;
}
