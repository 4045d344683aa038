/** Agents and slots, which trial runs where, utilization; refreshed every 2 s (a poll,
 * not the live channel: each answer is the whole state, so nothing is missed). */
import { useEffect, useState } from "react";
import { Link } from "react-router";
import { api } from "../api";
import { ErrorLine, Progress } from "../components/Bits";
import { usePageTitle } from "../title";

/** A slot; ``task`` is the scheduler's id of what holds it (``trial-7``, ``task-ab12cd34``), and
 * ``task_id`` a task's id in the task list (``ab12cd34``). */
interface Slot {
  slot_id: number; task: string | null; trial_id: number | null; experiment_id: number | null;
  task_id?: string | null; task_kind?: string | null;
}
interface Agent { id: string; slots: number; used_slots: number; label: string; enabled: boolean; type: string; address: string; last_seen_seconds_ago: number; slot_tasks: Slot[] }
interface ClusterResponse { agents: Agent[]; slots: number; used_slots: number; utilization: number }

/** Where a task other than a trial (a command, notebook, shell, TensorBoard) is shown: the
 * task list, with its logs open. */
export const taskPath = (taskId: string) => `/tasks?logs=${encodeURIComponent(taskId)}`;

export default function ClusterPage() {
  usePageTitle("Cluster");
  const [data, setData] = useState<ClusterResponse | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let live = true;
    // A failed poll shows its error over the last answer; the next success clears it.
    const load = () => api<ClusterResponse>("/ui/cluster").then((d) => {
      if (!live) return;
      setData(d);
      setError(null);
    }, (e) => live && setError(e));
    void load();
    const timer = setInterval(load, 2000);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  if (!data) return error ? <ErrorLine error={error} /> : <p className="muted">Loading…</p>;
  return (
    <div>
      <h1>Cluster</h1>
      <ErrorLine error={error} />
      <p data-testid="utilization">
        {data.used_slots} of {data.slots} slots in use <Progress value={data.utilization} />
      </p>
      {data.agents.map((a) => (
        <section key={a.id} className="agent" data-testid="agent">
          <h2>{a.id} <small className="muted">{agentDetails(a)}</small></h2>
          <div className="slots">
            {a.slot_tasks.map((s) => (
              <div key={s.slot_id} className={`slot ${s.task ? "busy" : "free"}`} data-testid="slot">
                <strong>slot {s.slot_id}</strong>
                <div>
                  {s.trial_id != null ? (
                    <Link to={`/experiments/${s.experiment_id}/trials/${s.trial_id}`}>trial {s.trial_id}</Link>
                  ) : s.task_id ? (
                    <Link to={taskPath(s.task_id)} data-testid="slot-task">{s.task_kind ?? "task"} {s.task_id}</Link>
                  ) : s.task ? s.task : <span className="muted">free</span>}
                  {s.experiment_id != null && <> · <Link to={`/experiments/${s.experiment_id}`}>experiment {s.experiment_id}</Link></>}
                </div>
              </div>
            ))}
          </div>
        </section>
      ))}
    </div>
  );
}

/** What the heading says of an agent after its id: its type (unless the id says it: the
 * master's own slots read "embedded embedded"), label, address, and whether it is disabled. */
export function agentDetails(a: { id: string; type: string; label: string; address: string; enabled: boolean }): string {
  return [a.type !== a.id ? a.type : "", a.label ? `label ${a.label}` : "", a.address, a.enabled ? "" : "disabled"]
    .filter(Boolean).join(" · ");
}
