/** Series with their own x values -> uPlot's aligned data (one shared x array). */

export interface XYSeries {
  xs: number[];
  ys: (number | null)[];
}

/** The union of x values, and each series' y at them (null where it has none). When the
 * union is larger than ``maxColumns`` (e.g. wall-clock x of many trials), x values snap
 * to ``maxColumns`` equal bins first, which a chart cannot tell apart anyway. */
export function alignSeries(series: XYSeries[], maxColumns = 20000): [number[], ...(number | null)[][]] {
  if (sharedXs(series)) return [series[0].xs, ...series.map((s) => s.ys)];
  const all = new Set<number>();
  for (const s of series) for (const x of s.xs) all.add(x);
  let snap = (x: number) => x;
  if (all.size > maxColumns) {
    let lo = Infinity;
    let hi = -Infinity;
    for (const x of all) {
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
    const step = (hi - lo) / (maxColumns - 1) || 1;
    snap = (x: number) => lo + Math.round((x - lo) / step) * step;
    const snapped = new Set<number>();
    for (const x of all) snapped.add(snap(x));
    all.clear();
    for (const x of snapped) all.add(x);
  }
  const xs = Float64Array.from(all).sort();
  const index = new Map<number, number>();
  xs.forEach((x, i) => index.set(x, i));
  const columns = series.map((s) => {
    const ys: (number | null)[] = new Array(xs.length).fill(null);
    for (let i = 0; i < s.xs.length; i++) ys[index.get(snap(s.xs[i]))!] = s.ys[i];
    return ys;
  });
  return [Array.from(xs), ...columns];
}

/** Whether every series has the same ascending x values (trials validating on one schedule). */
function sharedXs(series: XYSeries[]): boolean {
  if (!series.length) return false;
  const first = series[0].xs;
  for (let i = 1; i < first.length; i++) if (!(first[i] > first[i - 1])) return false;
  for (const s of series) {
    if (s.xs === first) continue;
    if (s.xs.length !== first.length) return false;
    for (let i = 0; i < first.length; i++) if (s.xs[i] !== first[i]) return false;
  }
  return true;
}
