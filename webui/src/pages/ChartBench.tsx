/** /bench/chart?trials=100&points=10000: the learning-curve chart with synthetic data, timed
 * from data to drawn frame (the browser tests read data-ms to report it in the README). */
import { useCallback, useMemo, useState } from "react";
import { useSearchParams } from "react-router";
import type { Series, Trial } from "../api";
import Curves from "../components/Curves";

export function syntheticSeries(trials: number, points: number): Series[] {
  const out: Series[] = [];
  for (let t = 0; t < trials; t++) {
    const batches = new Array(points);
    const values = new Array(points);
    const time = new Array(points);
    const rate = 0.5 + (t % 17) / 10;
    for (let i = 0; i < points; i++) {
      batches[i] = (i + 1) * 10;
      values[i] = Math.exp(-rate * (i / points) * 4) + 0.05 * Math.sin(i / 50 + t) + 0.1;
      time[i] = i * 0.5;
    }
    out.push({ trial_id: t + 1, batches, values, time, count: points, records_per_batch: 32 });
  }
  return out;
}

export default function ChartBench() {
  const [params] = useSearchParams();
  const trials = Number(params.get("trials") ?? 100);
  const points = Number(params.get("points") ?? 10000);
  // The clock starts once the data exists: generating it is not the chart's work.
  const { data, t0 } = useMemo(() => {
    const series = syntheticSeries(trials, points);
    const t0 = performance.now();
    return { data: { metric: "loss", kind: "training" as const, series }, t0 };
  }, [trials, points]);
  const trialRows: Trial[] = [];
  const [ms, setMs] = useState<number | null>(null);
  const drawn = useCallback(() => {
    requestAnimationFrame(() => setMs(performance.now() - t0));
  }, [t0]);
  return (
    <div>
      <h1>Chart benchmark: {trials} trials × {points} points</h1>
      <p data-testid="bench-result" data-ms={ms ?? ""}>{ms == null ? "drawing…" : `drawn in ${ms.toFixed(0)} ms`}</p>
      <Curves data={data} trials={trialRows} bestTrialId={1} onDrawn={ms == null ? drawn : undefined} />
    </div>
  );
}
