/** Pure helpers: formatting, hyperparameter flattening, smoothing. */

export function formatDuration(seconds: number | null | undefined): string {
  if (seconds == null || !isFinite(seconds)) return "";
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${sec}s`;
  return `${sec}s`;
}

/** The UI's one way of showing a time: local date and time of day to the second, as
 * ``[date, time]`` ("11/29/2026", "6:34:08 AM" in en-US); null for no time or a bad one.
 * Every page formats times through this (a test greps the sources for other ways). */
export function timeParts(iso: string | null | undefined): [string, string] | null {
  if (!iso) return null;
  const d = new Date(iso);
  if (isNaN(d.getTime())) return null;
  return [d.toLocaleDateString(), d.toLocaleTimeString()];
}

/** A time on one line: "11/29/2026, 6:34:08 AM" (``timeParts`` joined). */
export function formatTime(iso: string | null | undefined): string {
  const parts = timeParts(iso);
  return parts ? `${parts[0]}, ${parts[1]}` : "";
}

/** A number to ``digits`` significant digits without trailing zeros: 0.01124, 5.025e-6,
 * 1e-4 (not 1.000e-4: the zeros said nothing and a round log-axis tick stood out among
 * its neighbours); integers whole, with thousands separators. */
export function formatNumber(v: unknown, digits = 4): string {
  if (v == null) return "";
  if (typeof v !== "number") return String(v);
  if (!isFinite(v)) return String(v);
  if (Number.isInteger(v)) return v.toLocaleString("en-US");
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e6)) return v.toExponential(digits - 1).replace(/\.?0+e/, "e");
  return Number(v.toPrecision(digits)).toString();
}

/** `n` and the noun that agrees with it: counted(1, "trial") is "1 trial", counted(2, "batch") "2 batches". */
export function counted(n: number, singular: string, plural?: string): string {
  const many = plural ?? singular + (/(s|sh|ch|x|z)$/.test(singular) ? "es" : "s");
  return `${n.toLocaleString("en-US")} ${n === 1 ? singular : many}`;
}

/** What a trial's steps (`total_batches`) count, as the master's `step_unit` says
 * (determined/common/entrypoint.py): batches for a Trial class; a script's steps are in
 * its searcher's unit (epochs for `max_length: {epochs: 3}`), else its own steps. */
export type StepUnit = "batch" | "epoch" | "record" | "step";
/** Each step unit and its plural (tests/common/test_step_unit.py checks it against Python's). */
export const STEP_UNITS: Record<StepUnit, string> = { batch: "batches", epoch: "epochs", record: "records", step: "steps" };

function knownUnit(unit: string | null | undefined): StepUnit {
  return unit != null && Object.hasOwn(STEP_UNITS, unit) ? (unit as StepUnit) : "batch";
}

/** A step unit's plural (an axis, a column): stepUnits("epoch") is "epochs"; a master
 * that does not say (older, or an unknown unit) counts batches. */
export function stepUnits(unit?: string | null): string {
  return STEP_UNITS[knownUnit(unit)];
}

/** A table header of steps: "Batches", "Epochs". */
export function stepsTitle(unit?: string | null): string {
  const plural = stepUnits(unit);
  return plural[0].toUpperCase() + plural.slice(1);
}

/** `n` steps in `unit`: stepsText(1, "epoch") is "1 epoch", stepsText(3, "batch") "3 batches". */
export function stepsText(n: number, unit?: string | null): string {
  const u = knownUnit(unit);
  return counted(n, u, STEP_UNITS[u]);
}

export function formatBytes(n: number): string {
  if (!isFinite(n)) return "";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

/** Nested hyperparameters as dotted keys: {opt: {lr: 1}} -> {"opt.lr": 1}. */
export function flattenHparams(h: Record<string, unknown>, prefix = ""): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(h ?? {})) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === "object" && !Array.isArray(v)) Object.assign(out, flattenHparams(v as Record<string, unknown>, key));
    else out[key] = v;
  }
  return out;
}

/** Exponential moving average with TensorBoard's debiasing; ``weight`` in [0, 1). */
export function smooth(values: (number | null)[], weight: number): (number | null)[] {
  if (weight <= 0) return values;
  let last = 0;
  let n = 0;
  return values.map((v) => {
    if (v == null || !isFinite(v)) return v;
    last = last * weight + (1 - weight) * v;
    n++;
    return last / (1 - Math.pow(weight, n));
  });
}

/** A checkpoint's validation metrics by name (flat, or under ``validation_metrics``). */
export function validationMetrics(validation: Record<string, unknown> | null | undefined): Record<string, unknown> {
  const nested = validation?.validation_metrics;
  if (nested && typeof nested === "object") return nested as Record<string, unknown>;
  return validation ?? {};
}

/** Compare for sorting: numbers numerically, strings naturally, empty last. */
export function compareValues(a: unknown, b: unknown): number {
  const empty = (x: unknown) => x == null || x === "" || (typeof x === "number" && isNaN(x));
  if (empty(a) && empty(b)) return 0;
  if (empty(a)) return 1;
  if (empty(b)) return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

export const TERMINAL = new Set(["COMPLETED", "CANCELED", "ERROR"]);

/** A palette of distinguishable colors for many series. */
export function seriesColor(i: number): string {
  const hue = (i * 137.508) % 360;
  return `hsl(${hue.toFixed(1)}, 65%, 45%)`;
}

/** Trials the searcher stopped before the longest trial's length (pruned, e.g. at an ASHA
 * rung), and trials that ended in ERROR or CANCELED: their curves are drawn dashed and hollow. */
export function stoppedTrials(trials: { id: number; state: string; total_batches: number }[]): Set<number> {
  const longest = Math.max(0, ...trials.map((t) => t.total_batches));
  return new Set(
    trials
      .filter((t) => (t.state === "ERROR" || t.state === "CANCELED") || (TERMINAL.has(t.state) && t.total_batches < longest))
      .map((t) => t.id),
  );
}

/** The x range that shows every point with a small margin (a single x gets a window around it). */
export function fitRange(min: number | null, max: number | null): [number, number] {
  if (min == null || max == null || !isFinite(min) || !isFinite(max)) return [0, 1];
  if (min === max) {
    const pad = Math.abs(max) * 0.1 || 1;
    return [min - pad, max + pad];
  }
  const pad = (max - min) * 0.04;
  return [min - pad, max + pad];
}

/** "12%" for an experiment's progress; ERROR and CANCELED experiments did not finish their
 * search (the searcher counts failed trials as closed), so they show their state instead. */
export function progressLabel(state: string, progress: number | null | undefined): string {
  if (state === "ERROR") return "failed";
  if (state === "CANCELED") return "canceled";
  return `${Math.round(Math.min(1, Math.max(0, progress || 0)) * 100)}%`;
}

/** A metric's name with its kind where the name does not already say it: "validation
 * accuracy", "training loss", but "validation_error", not "validation validation_error". */
export function metricLabel(kind: "training" | "validation", metric: string): string {
  const says = kind === "validation" ? /(^|[^a-z])e?val/i : /(^|[^a-z])train/i;
  return says.test(metric) ? metric : `${kind} ${metric}`;
}

/** A trial's state in the curve picker; "stopped early" only where the state does not say
 * more (a failed or canceled trial stopped early too, and its state says why). */
export function trialNote(state: string, stoppedEarly: boolean): string {
  return stoppedEarly && state !== "ERROR" && state !== "CANCELED" ? `${state} · stopped early` : state;
}
