import { describe, expect, it } from "vitest";
import { gpuSeries, type GpuSample } from "../components/GpuMetrics";

const sample = (time: string, gpu: number, utilization: number, usedGiB: number): GpuSample => ({
  time, gpu_index: gpu, gpu_uuid: `GPU-${gpu}`, utilization, memory_used: usedGiB * 2 ** 30, memory_total: 16 * 2 ** 30,
});

describe("gpuSeries", () => {
  it("draws one utilization and one memory series per GPU, in minutes from the first sample", () => {
    const { utilization, memory } = gpuSeries([
      sample("2026-01-01T00:00:00Z", 1, 10, 2),
      sample("2026-01-01T00:00:00Z", 0, 50, 1),
      sample("2026-01-01T00:01:30Z", 0, 70, 3),
    ]);
    expect(utilization.map((s) => s.label)).toEqual(["GPU 0 %", "GPU 1 %"]);
    expect(utilization[0].xs).toEqual([0, 1.5]);
    expect(utilization[0].ys).toEqual([50, 70]);
    expect(memory[0].ys).toEqual([1, 3]);
    expect(memory[1].ys).toEqual([2]);
  });
  it("has no series without samples", () => {
    expect(gpuSeries([])).toEqual({ utilization: [], memory: [] });
  });
});
