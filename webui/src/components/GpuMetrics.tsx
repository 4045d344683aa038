/** The GPUs a trial ran on: utilization and memory over time, as its agent sampled them
 * (GET /trials/{id}/gpu-metrics). Renders nothing for a trial without GPU samples. */
import { useEffect, useMemo, useState } from "react";
import { api } from "../api";
import { seriesColor } from "../format";
import LineChart, { type ChartSeries } from "./LineChart";

export interface GpuSample {
  time: string;
  gpu_index: number;
  gpu_uuid: string;
  utilization: number;
  memory_used: number;
  memory_total: number;
}

const GIB = 2 ** 30;
const POLL_MS = 10_000;

/** One utilization and one memory series per GPU, x in minutes since the first sample. */
export function gpuSeries(samples: GpuSample[]): { utilization: ChartSeries[]; memory: ChartSeries[] } {
  const t0 = samples.length ? Date.parse(samples[0].time) : 0;
  const byGpu = new Map<number, GpuSample[]>();
  for (const s of samples) byGpu.set(s.gpu_index, [...(byGpu.get(s.gpu_index) ?? []), s]);
  const utilization: ChartSeries[] = [];
  const memory: ChartSeries[] = [];
  [...byGpu.entries()].sort(([a], [b]) => a - b).forEach(([gpu, rows], i) => {
    const xs = rows.map((r) => (Date.parse(r.time) - t0) / 60_000);
    utilization.push({ label: `GPU ${gpu} %`, xs, ys: rows.map((r) => r.utilization), color: seriesColor(i) });
    memory.push({ label: `GPU ${gpu} GiB`, xs, ys: rows.map((r) => r.memory_used / GIB), color: seriesColor(i) });
  });
  return { utilization, memory };
}

export default function GpuMetrics({ trialId, running }: { trialId: number; running: boolean }) {
  const [samples, setSamples] = useState<GpuSample[]>([]);
  useEffect(() => {
    let stopped = false;
    const load = () =>
      api<{ gpu_metrics: GpuSample[] }>(`/trials/${trialId}/gpu-metrics`)
        .then((r) => !stopped && setSamples(r.gpu_metrics))
        .catch(() => undefined); // an older master without the route: no GPU section
    void load();
    const timer = running ? window.setInterval(load, POLL_MS) : undefined;
    return () => {
      stopped = true;
      window.clearInterval(timer);
    };
  }, [trialId, running]);
  const series = useMemo(() => gpuSeries(samples), [samples]);
  if (!samples.length) return null;
  const gpus = [...new Map(samples.map((s) => [s.gpu_index, s])).values()];
  return (
    <section data-testid="gpu-metrics">
      <h2>GPUs</h2>
      <p className="muted">
        {gpus.map((g) => `GPU ${g.gpu_index} (${g.gpu_uuid}, ${(g.memory_total / GIB).toFixed(1)} GiB)`).join("; ")}
        {" "}— the whole GPU, shared with any other trial on it
      </p>
      <LineChart testId="gpu-utilization-chart" series={series.utilization} xLabel="minutes" yLabel="utilization %" height={200} />
      <LineChart testId="gpu-memory-chart" series={series.memory} xLabel="minutes" yLabel="memory used (GiB)" height={200} />
    </section>
  );
}
