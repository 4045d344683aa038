/** Many long line series on one canvas (uPlot). */
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { alignSeries } from "./align";

export interface ChartSeries {
  label: string;
  xs: number[];
  ys: (number | null)[];
  color: string;
  highlight?: boolean;
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
}

export default function LineChart({ series, xLabel, yLabel, logY, height = 320, onDrawn, testId }: Props) {
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
    const opts: uPlot.Options = {
      width: Math.max(300, el.clientWidth || 800),
      height,
      legend: { show: series.length <= 10 },
      cursor: { points: { show: false } },
      scales: { x: { time: false }, y: logY ? { distr: 3 } : {} },
      axes: [{ label: xLabel }, { label: yLabel, size: 70 }],
      series: [
        { label: xLabel },
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: s.highlight ? 3 : anyHighlight ? 1 : 1.5,
          spanGaps: true,
          points: { show: false },
        })),
      ],
    };
    const plot = new uPlot(opts, data as uPlot.AlignedData, el);
    el.dataset.series = String(series.length);
    el.dataset.points = String(series.reduce((n, s) => n + s.xs.length, 0));
    drawnRef.current?.(performance.now() - t0);
    const resize = () => plot.setSize({ width: Math.max(300, el.clientWidth), height });
    window.addEventListener("resize", resize);
    return () => {
      window.removeEventListener("resize", resize);
      plot.destroy();
    };
  }, [series, xLabel, yLabel, logY, height]);
  return <div className="chart" ref={box} data-testid={testId ?? "line-chart"} />;
}
