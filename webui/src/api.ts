/** The master's REST API (/api/v1): a fetch wrapper that sends the session token. */

const TOKEN_KEY = "det.token";

export class ApiError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

export function getToken(): string | null {
  return localStorage.getItem(TOKEN_KEY);
}

export function setToken(token: string | null): void {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
}

export function authHeaders(): Record<string, string> {
  const token = getToken();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

/** Listeners told when a request gets 401 (the session ended): the app shows sign-in. */
export const unauthorizedListeners = new Set<() => void>();

export async function api<T = any>(path: string, init: RequestInit & { json?: unknown } = {}): Promise<T> {
  const headers: Record<string, string> = { ...authHeaders(), ...(init.headers as Record<string, string>) };
  let body = init.body;
  if (init.json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(init.json);
  }
  const response = await fetch(`/api/v1${path}`, { ...init, headers, body });
  if (!response.ok) throw await responseError(response);
  return parseBody(await response.text()) as T;
}

function parseBody(text: string): any {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return { error: text };
  }
}

/** The error a failed answer stands for (the API's message and field details); a 401
 * also tells ``unauthorizedListeners``. */
export async function responseError(response: Response): Promise<ApiError> {
  const data = parseBody(await response.text());
  if (response.status === 401) unauthorizedListeners.forEach((f) => f());
  const message = data?.error ?? `${response.status} ${response.statusText}`;
  const details = Array.isArray(data?.details)
    ? data.details.map((d: any) => `${d.field}: ${d.message}`).join("; ")
    : "";
  return new ApiError(response.status, details ? `${message} (${details})` : message);
}

export const post = <T = any>(path: string, json?: unknown) => api<T>(path, { method: "POST", json: json ?? {} });

export interface User {
  id: number;
  username: string;
  admin: boolean;
  active: boolean;
}

export interface ExperimentRow {
  id: number;
  state: string;
  description: string;
  labels: string[];
  archived: boolean;
  progress: number;
  owner: string;
  parent_id: number | null;
  start_time: string | null;
  end_time: string | null;
  duration: number | null;
  searcher: string | null;
  metric: string;
  smaller_is_better: boolean;
  best_metric: number | null;
  num_trials: number;
}

export interface Trial {
  id: number;
  experiment_id: number;
  request_id: string;
  state: string;
  hparams: Record<string, unknown>;
  seed: number;
  restarts: number;
  total_batches: number;
  best_validation: number | null;
  latest_checkpoint: string | null;
  start_time: string | null;
  end_time: string | null;
  records_per_batch?: number | null;
  /** Why its process last failed, as the master stored it ("Trial failed (exit code 1):
   * Traceback ..."); null if none did. Only the trial's own answers carry it (its page's
   * workloads and live events), not the experiment's trial list; absent from an older
   * master. */
  error?: string | null;
  /** That error in one line ("Trial failed (exit code 1): ValueError: ..."), at most 200
   * characters: what the experiment's trial list carries; null if none failed. */
  error_summary?: string | null;
}

export interface ExperimentDetail extends ExperimentRow {
  config: Record<string, any>;
  config_yaml: string;
  /** The config as submitted, before the master's defaults (the fork tab starts from it);
   * the expanded config for experiments made before the master kept it. */
  original_config_yaml: string;
  trials: Trial[];
  metric_names: { training: string[]; validation: string[] };
  /** What the trials' steps count: "batch", or a script's "epoch", "record", "step". */
  step_unit?: string;
  last_metric_id: number;
  last_log_id: number;
}

export interface Series {
  trial_id: number;
  batches: number[];
  values: (number | null)[];
  time: number[];
  count: number;
  records_per_batch?: number | null;
}

export interface MetricRow {
  id: number;
  trial_id: number;
  kind: "training" | "validation";
  total_batches: number;
  end_time: number;
  metrics: Record<string, unknown>;
}

export interface Checkpoint {
  uuid: string;
  trial_id: number;
  experiment_id: number;
  total_batches: number;
  state: string;
  resources: Record<string, number> | null;
  metadata: Record<string, unknown> | null;
  validation: Record<string, unknown> | null;
  end_time: string | null;
}

/** A registered model as ``GET /models`` returns it (``master/api/_registry.py``). */
export interface RegistryModel {
  name: string;
  description: string;
  metadata: Record<string, unknown>;
  creation_time: string | null;
  last_updated_time: string | null;
  num_versions: number;
}

/** A model version: a checkpoint, with its experiment's searcher metric and its value there. */
export interface ModelVersion {
  version: number;
  creation_time: string | null;
  checkpoint: Checkpoint;
  searcher_metric: { name: string; smaller_is_better: boolean; value: number | null };
}

export interface LogLine {
  id: number;
  timestamp: string;
  line: string;
}

/** A task as ``GET /tasks`` returns it (``master/api/_tasks.py``). */
export interface TaskRow {
  id: string;
  kind: string;
  owner: string;
  state: string;
  description: string;
  slots: number;
  agent_id: string | null;
  slot_ids: number[] | null;
  exit_code: number | null;
  end_reason: string | null;
  start_time: string | null;
  end_time: string | null;
  url: string | null;
}

/** Whether ``user`` may act on something ``owner`` owns (the API's rule). */
export function canEdit(user: User | null, owner: string): boolean {
  return !!user && (user.admin || user.username === owner);
}
