/** Launch a TensorBoard or a notebook through the task API (``POST /tasks``, what
 * ``det tensorboard start`` and ``det notebook start`` use), then follow the task until it
 * runs and offer to open it through the proxy. */
import { useEffect, useId, useState } from "react";
import { Link } from "react-router";
import { api, authHeaders, getToken, post, type TaskRow } from "../api";
import { ErrorLine, StateBadge } from "./Bits";

/** Where a browser opens each kind of service behind the proxy (shells need `det shell open`). */
const OPEN_PATHS: Record<string, string> = { notebook: "lab", tensorboard: "" };

/** The proxy URL a browser opens for ``task`` with the session ``token`` (kept in a cookie
 * by the proxy), or null when the task serves nothing a browser can show. */
export function openUrl(task: TaskRow, token: string | null): string | null {
  if (!task.url || !(task.kind in OPEN_PATHS) || task.state !== "RUNNING" || !token) return null;
  return `${task.url}${OPEN_PATHS[task.kind]}?det_token=${encodeURIComponent(token)}`;
}

export interface LaunchRequest {
  kind: "tensorboard" | "notebook";
  experiment_ids?: number[];
  trial_ids?: number[];
  config?: Record<string, unknown>;
}

/** Follows one task: its row, refreshed every second until it ends or runs and its
 * service answers through the proxy (``ready``: any answer but a 5xx, which the proxy
 * gives while the service is still starting). */
export function useTask(id: string | null) {
  const [task, setTask] = useState<TaskRow | null>(null);
  const [ready, setReady] = useState(false);
  useEffect(() => {
    if (!id) return;
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const t = await api<TaskRow>(`/tasks/${encodeURIComponent(id)}`);
        if (!live) return;
        setTask(t);
        if (t.state === "TERMINATED") return;
        if (t.state === "RUNNING" && t.url && t.kind in OPEN_PATHS) {
          const r = await fetch(`${t.url}${OPEN_PATHS[t.kind]}`, { headers: authHeaders() });
          if (r.status < 500) {
            if (live) setReady(true);
            return;
          }
        }
      } catch {
        // a transient failure: try again
      }
      if (live) timer = setTimeout(() => void poll(), 1000);
    };
    void poll();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [id]);
  return { task, ready };
}

/** The launch button; when ``disabled``, ``reason`` (why: "sign in to start a
 * TensorBoard") shows beside it, muted, and describes it to screen readers. */
export default function TaskLauncher({ label, request, disabled, reason, testId }: {
  label: string;
  request: LaunchRequest;
  disabled?: boolean;
  reason?: string;
  testId: string;
}) {
  const reasonId = useId();
  const [id, setId] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const { task, ready } = useTask(id);
  const launch = async () => {
    setError(null);
    setBusy(true);
    try {
      const t = await post<TaskRow>("/tasks", request);
      setId(t.id);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const url = task && ready ? openUrl(task, getToken()) : null;
  return (
    <span className="launcher" data-testid={testId}>
      <button disabled={disabled || busy} aria-describedby={disabled && reason ? reasonId : undefined}
        onClick={() => void launch()}>{label}</button>
      {disabled && reason ? <small className="muted launcher-reason" id={reasonId} data-testid={`${testId}-reason`}>{reason}</small> : null}
      {task && (
        <span className="launched" data-testid={`${testId}-task`}>
          {" "}<Link to={`/tasks?logs=${encodeURIComponent(task.id)}`}>{task.kind} {task.id}</Link> <StateBadge state={task.state} />
          {task.state === "TERMINATED" && task.end_reason ? <small className="muted"> {task.end_reason}</small> : null}
          {url ? <> <a href={url} target="_blank" rel="noreferrer" data-testid={`${testId}-open`}>open</a></> : null}
          {!url && task.state !== "TERMINATED" ? <small className="muted"> starting…</small> : null}
        </span>
      )}
      <ErrorLine error={error} />
    </span>
  );
}
