/** Tasks (commands, notebooks, shells, TensorBoards): open, logs with live tail, kill; live updates. */
import { useCallback, useEffect, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { api, canEdit, getToken, post, type LogLine, type TaskRow } from "../api";
import TaskLauncher, { openUrl } from "../components/TaskLauncher";
import { follow } from "../events";
import { useLoaded } from "../loaded";
import { useSession } from "../session";
import Table, { type Column } from "../components/Table";
import Logs, { merge } from "../components/Logs";
import { ConfirmButton, ErrorLine, StateBadge, When } from "../components/Bits";
import { useWaits, WaitingNote } from "../components/Waiting";
import { usePageTitle } from "../title";

export { openUrl } from "../components/TaskLauncher";

/** The list after a ``tasks`` event: changed rows replaced or added (newest first), removed ones dropped. */
export function applyTaskEvent(rows: TaskRow[], payload: { changed: TaskRow[]; removed: string[] }): TaskRow[] {
  const changed = new Map(payload.changed.map((t) => [t.id, t]));
  const removed = new Set(payload.removed);
  const known = new Set(rows.map((t) => t.id));
  const added = payload.changed.filter((t) => !known.has(t.id));
  const kept = rows.filter((t) => !removed.has(t.id)).map((t) => changed.get(t.id) ?? t);
  return [...added, ...kept].sort((a, b) => (b.start_time ?? "").localeCompare(a.start_time ?? ""));
}

export default function TaskList() {
  usePageTitle("Tasks");
  const { user, anonymous } = useSession();
  const [params, setParams] = useSearchParams();
  const [actionError, setActionError] = useState<unknown>(null);
  const [channelError, setChannelError] = useState<unknown>(null);
  const [live, setLive] = useState<LogLine[]>([]);
  const logsOf = params.get("logs");

  const fetcher = useCallback(async () => {
    const r = await api<{ tasks: TaskRow[] }>("/tasks?all=true");
    return applyTaskEvent([], { changed: r.tasks, removed: [] });
  }, []);
  const { data: rows, error: loadError, load, update } = useLoaded(fetcher);
  const { waits, onEvent: onWaitingEvent } = useWaits();
  const error = loadError ?? channelError ?? actionError;

  // Live: task rows and the open task's log lines, from the newest line of its tail and
  // then from the newest seen (so a reconnection repeats none). The list loads when the
  // channel connects (and at each reconnection, for changes made meanwhile), or without
  // it when it is slow. A task that is gone refuses the channel: the error shows until
  // its logs close.
  const [tail, setTail] = useState<{ task: string; lastId: number } | null>(null);
  const tailAfter = logsOf && tail?.task === logsOf ? tail.lastId : null;
  const onTail = useCallback((lastId: number) => {
    if (logsOf) setTail({ task: logsOf, lastId });
  }, [logsOf]);
  useEffect(() => {
    setLive([]);
    setChannelError(null);
    if (logsOf && tailAfter == null) return; // its tail first, to follow from
    let logsAfter = tailAfter ?? 0;
    return follow(
      (): Record<string, string | number | boolean> =>
        ({ tasks: true, waiting: true, ...(logsOf && { task_id: logsOf, task_logs_after: logsAfter }) }),
      (name, payload) => {
        if (onWaitingEvent(name, payload)) return;
        if (name === "tasks") update((r) => applyTaskEvent(r, payload));
        else if (name === "task_logs") {
          const lines = payload as LogLine[];
          logsAfter = lines[lines.length - 1].id;
          setLive((cur) => merge(cur, lines));
        }
      },
      { load, onRefused: setChannelError },
    );
  }, [logsOf, tailAfter, load, update, onWaitingEvent]);

  const kill = async (t: TaskRow) => {
    try {
      setActionError(null);
      const updated = await post<TaskRow>(`/tasks/${encodeURIComponent(t.id)}/kill`);
      update((r) => applyTaskEvent(r, { changed: [updated], removed: [] }));
    } catch (e) {
      setActionError(e);
    }
  };
  const token = getToken();
  // Without a token (signed out, or the master's anonymous access) the proxy opens nothing.
  const signedOut = !user || anonymous || !token;
  const columns: Column<TaskRow>[] = [
    { key: "id", title: "ID", value: (t) => t.id },
    { key: "kind", title: "Kind", value: (t) => t.kind },
    { key: "description", title: "Description", value: (t) => t.description,
      className: "wrap",
      render: (t) => t.description ? <span className="desc" title={t.description}>{t.description}</span> : <span className="muted">(none)</span> },
    { key: "owner", title: "Owner", value: (t) => t.owner },
    { key: "state", title: "State", value: (t) => t.state, className: "wrap", // a waiting note wraps
      render: (t) => (
        <>
          <StateBadge state={t.state} />
          {t.state === "PENDING" ? <WaitingNote wait={waits.tasks[t.id]} /> : null}
          {t.state === "TERMINATED" && (t.end_reason || t.exit_code != null) ? (
            <small className="muted" data-testid="end-reason"> {t.end_reason}{t.exit_code != null ? ` (exit ${t.exit_code})` : ""}</small>
          ) : null}
        </>
      ) },
    { key: "start_time", title: "Started", value: (t) => t.start_time, className: "wrap", render: (t) => <When iso={t.start_time} /> },
    // Below 1000 pixels the list fits without it (Agent names a running task's slots).
    { key: "slots", title: "Slots", value: (t) => t.slots, className: "wide-only" },
    { key: "agent_id", title: "Agent", value: (t) => t.agent_id ?? "", className: "wrap",
      render: (t) => (t.agent_id ? `${t.agent_id}${t.slot_ids?.length ? ` · slot ${t.slot_ids.join(",")}` : ""}` : "") },
    { key: "actions", title: "", value: () => null, sortable: false,
      render: (t) => {
        const url = openUrl(t, token);
        const mine = canEdit(user, t.owner);
        return (
          <span className="row-actions">
            {url && mine ? (
              <a href={url} target="_blank" rel="noreferrer" data-testid={`open-${t.id}`}>open</a>
            ) : null}
            {t.kind === "shell" && t.state === "RUNNING" ? <code className="muted">det shell open {t.id}</code> : null}
            <button className="link" data-testid={`logs-${t.id}`} onClick={() => setParams({ logs: t.id })}>logs</button>
            {!url && signedOut && t.kind in { notebook: 1, tensorboard: 1 } && t.state === "RUNNING" ? (
              <Link to="/login?next=/tasks" data-testid={`signin-open-${t.id}`}>sign in to open</Link>
            ) : null}
            {user ? (
              <ConfirmButton label="kill" testId={`kill-${t.id}`} disabled={!mine || t.state === "TERMINATED"}
                title={mine ? "" : `only ${t.owner} or an admin may kill it`}
                question={`Kill ${t.kind} ${t.id}? Its process stops now.`} confirmLabel="yes, kill it" onConfirm={() => void kill(t)} />
            ) : null}
          </span>
        );
      } },
  ];

  return (
    <div>
      <h1>Tasks</h1>
      <p className="muted">Commands, notebooks, shells and TensorBoards: <code>det cmd run</code>, <code>det notebook start</code>, <code>det shell start</code>, <code>det tensorboard start</code>.</p>
      {!signedOut ? (
        <div className="actions">
          <TaskLauncher label="launch notebook" testId="launch-notebook" request={{ kind: "notebook" }} />
          <span className="muted">TensorBoards start from an experiment's page.</span>
        </div>
      ) : (
        <p className="hint" data-testid="signed-out-hint">
          Not signed in{user ? <> (browsing as {user.username})</> : null}: you can see every task and read its logs
          {user ? <>, and kill tasks of {user.username}</> : null}. <Link to="/login?next=/tasks">Sign in</Link> to
          open notebooks and TensorBoards and to launch a notebook.
        </p>
      )}
      <ErrorLine error={error} />
      {rows == null ? <p className="muted">Loading…</p> : (
        <Table testId="task-table" columns={columns} rows={rows} rowKey={(t) => t.id}
          rowClass={(t) => (t.id === logsOf ? "selected" : "")}
          empty="No tasks yet (the line above says how to start one)." />
      )}
      {logsOf ? (
        <section>
          <h2>Logs of task {logsOf} <button className="link" onClick={() => setParams({})}>close</button></h2>
          <Logs key={logsOf} taskId={logsOf} live={live} onTail={onTail} />
        </section>
      ) : null}
    </div>
  );
}
