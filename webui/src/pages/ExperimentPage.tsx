/** One experiment: summary and actions, curves, trials, hyperparameter views, rungs,
 * checkpoints, config and fork. Live: trials and metrics arrive over /ui/events. */
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { Link, useParams, useSearchParams } from "react-router";
import { api, canEdit, getToken, post, type ExperimentDetail, type MetricRow, type Trial } from "../api";
import { follow } from "../events";
import { useLoaded } from "../loaded";
import { counted, flattenHparams, formatDuration, formatNumber, formatTime, stepsTitle, TERMINAL } from "../format";
import { useSession } from "../session";
import { Breakable, ConfirmButton, ErrorLine, Progress, StateBadge } from "../components/Bits";
import { useWaits, WaitingNote, type Waits } from "../components/Waiting";
import TaskLauncher from "../components/TaskLauncher";
import Curves, { appendRows, useExperimentCurves } from "../components/Curves";
import Table, { type Column } from "../components/Table";
import { ContourPlot, ImportanceBars, ParallelCoordinates, SlicePlots, type Importance } from "../components/HparamViews";
import Checkpoints from "../components/Checkpoints";
import { ForkForm, Rungs } from "../components/ExperimentExtras";
import { usePageTitle } from "../title";

const TABS = ["curves", "trials", "hyperparameters", "rungs", "checkpoints", "config", "fork"] as const;

export function bestTrial(trials: Trial[], smallerIsBetter: boolean): Trial | null {
  let best: Trial | null = null;
  for (const t of trials) {
    if (t.best_validation == null) continue;
    if (!best || (smallerIsBetter ? t.best_validation < best.best_validation! : t.best_validation > best.best_validation!)) best = t;
  }
  return best;
}

/** The curves' metric ("validation:loss"); a disabled "no metrics yet" before any ("no
 * metrics" once the experiment ``ended``). */
export function MetricPicker({ options, value, onChange, ended = false }: { options: string[]; value: string | null; onChange: (key: string) => void; ended?: boolean }) {
  return (
    <label>metric{" "}
      <select aria-label="metric" value={value ?? ""} disabled={options.length === 0} onChange={(e) => onChange(e.target.value)}>
        {options.length === 0 && <option value="">{ended ? "no metrics" : "no metrics yet"}</option>}
        {options.map((m) => <option key={m} value={m}>{m.replace(":", ": ")}</option>)}
      </select>
    </label>
  );
}

export default function ExperimentPage() {
  const id = Number(useParams().id);
  const { user } = useSession();
  const [params, setParams] = useSearchParams();
  const asked = (params.get("tab") ?? "curves") as (typeof TABS)[number];
  const fetcher = useCallback(() => api<ExperimentDetail>(`/ui/experiments/${id}`), [id]);
  const { data: exp, error: loadError, load, update } = useLoaded(fetcher);
  const { waits, onEvent: onWaitingEvent } = useWaits();
  const [channelError, setChannelError] = useState<unknown>(null);
  const error = loadError ?? channelError;
  const [actionError, setActionError] = useState<unknown>(null);
  const [metricKey, setMetricKey] = useState<string | null>(null);

  // The curves load once this experiment's first answer is here (another experiment's,
  // shown before, does not count): its metrics tail starts no later than their rows.
  const shown = exp != null && exp.id === id ? exp : null;
  const metricOptions = useMemo(() => {
    if (!shown) return [];
    return [
      ...shown.metric_names.validation.map((m) => `validation:${m}`),
      ...shown.metric_names.training.map((m) => `training:${m}`),
    ];
  }, [shown]);
  const chosen = !shown ? null : metricKey ?? (metricOptions.includes(`validation:${shown.metric}`) ? `validation:${shown.metric}` : metricOptions[0] ?? null);
  const [kind, metric] = chosen ? (chosen.split(/:(.*)/s) as ["training" | "validation", string]) : ["validation" as const, null];
  const curves = useExperimentCurves(id, kind, metric);

  // Live: trial changes and new metric rows. The experiment loads when the channel
  // connects (and at each reconnection, for changes made meanwhile), or without it when
  // it is slow. The metrics tail starts when the channel first opens, then goes on from
  // the newest row the page has (the first answer's or an event's), so a reconnection
  // repeats none and misses none (the curves load after the first answer).
  const expRef = useRef(exp);
  expRef.current = exp;
  const updateCurves = curves.update;
  useEffect(() => {
    setChannelError(null);
    let metricsAfter: number | null = null;
    const onEvent = (name: string, payload: any) => {
      if (onWaitingEvent(name, payload)) return;
      if (name === "trials") {
        update((e) => {
          const byId = new Map(e.trials.map((t) => [t.id, t]));
          for (const t of payload as Trial[]) byId.set(t.id, t);
          return { ...e, trials: [...byId.values()].sort((a, b) => a.id - b.id) };
        });
      } else if (name === "experiments") {
        const mine = (payload.changed as ExperimentDetail[]).find((e) => e.id === id);
        if (mine) update((e) => ({ ...e, ...mine, config: e.config, config_yaml: e.config_yaml, original_config_yaml: e.original_config_yaml, trials: e.trials, metric_names: e.metric_names }));
      } else if (name === "metrics") {
        const rows = payload as MetricRow[];
        metricsAfter = Math.max(metricsAfter ?? 0, ...rows.map((r) => r.id));
        const trials = expRef.current?.trials ?? [];
        updateCurves((d) => appendRows(d, rows, trials));
        update((e) => {
          const add = (names: string[], k: string) => {
            const s = new Set(names);
            for (const r of rows) if (r.kind === k) for (const [m, v] of Object.entries(r.metrics)) if (typeof v === "number") s.add(m);
            return s.size === names.length ? names : [...s].sort();
          };
          const training = add(e.metric_names.training, "training");
          const validation = add(e.metric_names.validation, "validation");
          return training === e.metric_names.training && validation === e.metric_names.validation ? e : { ...e, metric_names: { training, validation } };
        });
      }
    };
    const loadTail = async () => {
      const answer = await load();
      if (answer && metricsAfter == null) metricsAfter = answer.last_metric_id;
      return answer;
    };
    return follow(() => ({ experiment_id: id, experiments: true, waiting: true, ...(metricsAfter != null && { metrics_after: metricsAfter }) }),
      onEvent, { load: loadTail, onRefused: setChannelError });
  }, [id, load, update, updateCurves, onWaitingEvent]);

  usePageTitle(`Experiment ${id}`, shown?.state);
  if (!exp || exp.id !== id) return error ? <ErrorLine error={error} /> : <p className="muted">Loading…</p>;
  const mayEdit = canEdit(user, exp.owner);
  const best = bestTrial(exp.trials, exp.smaller_is_better);
  const act = async (verb: string) => {
    setActionError(null);
    try {
      await post(`/experiments/${id}/${verb}`);
      await load();
    } catch (e) {
      setActionError(e);
    }
  };
  const adaptive = String(exp.searcher ?? "").startsWith("adaptive");
  const tabs = TABS.filter((t) => t !== "rungs" || adaptive);
  // A link to a tab this experiment lacks (rungs of a random search, a misspelling) opens
  // the curves, not a page with no tab selected ("No trial has finished a rung yet").
  const tab = tabs.includes(asked) ? asked : "curves";
  const signedIn = !!user && !!getToken(); // the proxy opens TensorBoards only for a signed-in user
  return (
    <div>
      <h1>
        Experiment {exp.id} <StateBadge state={exp.state} />
      </h1>
      {exp.state === "ACTIVE" && waits.experiments[exp.id] ? (
        <p className="waiting" data-testid="experiment-waiting"><WaitingNote wait={waits.experiments[exp.id]} full /></p>
      ) : null}
      <ErrorLine error={error} />
      <Summary exp={exp} bestId={best?.id ?? null} mayEdit={mayEdit} onChanged={load} />
      <div className="actions">
        {!TERMINAL.has(exp.state) && (
          <>
            <button disabled={!mayEdit || exp.state !== "ACTIVE"} onClick={() => void act("pause")}>pause</button>
            <button disabled={!mayEdit || exp.state !== "PAUSED"} onClick={() => void act("activate")}>activate</button>
            <ConfirmButton label="cancel" testId="cancel-experiment" disabled={!mayEdit} confirmLabel="yes, cancel it"
              question={`Cancel experiment ${exp.id}? Its trials checkpoint and stop; no new trials start.`} onConfirm={() => void act("cancel")} />
            <ConfirmButton label="kill" testId="kill-experiment" disabled={!mayEdit} confirmLabel="yes, kill it"
              question={`Kill experiment ${exp.id}? Its trials stop now, without checkpoints.`} onConfirm={() => void act("kill")} />
          </>
        )}
        {TERMINAL.has(exp.state) && (
          <button disabled={!mayEdit} onClick={() => void act(exp.archived ? "unarchive" : "archive")}>{exp.archived ? "unarchive" : "archive"}</button>
        )}
        <TaskLauncher label="open TensorBoard" testId="tensorboard" request={{ kind: "tensorboard", experiment_ids: [exp.id] }}
          disabled={!signedIn || exp.trials.length === 0}
          reason={!signedIn ? "sign in to start a TensorBoard" : "no trials yet"} />
        {!mayEdit && <span className="muted">read-only: owned by {exp.owner}</span>}
      </div>
      <ErrorLine error={actionError} />
      <nav className="tabs">
        {tabs.map((t) => (
          <button key={t} className={t === tab ? "active" : ""} onClick={() => setParams({ tab: t })}>{t}</button>
        ))}
      </nav>
      {tab === "curves" && (
        <section>
          <MetricPicker options={metricOptions} value={chosen} onChange={setMetricKey} ended={TERMINAL.has(exp.state)} />
          {metricOptions.length > 0 ? <Curves data={curves.data} trials={exp.trials} bestTrialId={best?.id ?? null} unit={exp.step_unit} /> : (
            // The tab showed a disabled menu and nothing else.
            <p className="muted" data-testid="curves-empty">{TERMINAL.has(exp.state)
              ? "No learning curves: no trial reported a metric before the experiment ended."
              : "No learning curves yet: they show here as trials report training and validation metrics."}</p>
          )}
          <ErrorLine error={curves.error} />
        </section>
      )}
      {tab === "trials" && <TrialsTable exp={exp} bestId={best?.id ?? null} signedIn={signedIn} waits={waits} />}
      {tab === "hyperparameters" && <HparamTab exp={exp} bestId={best?.id ?? null} />}
      {tab === "rungs" && <Rungs experimentId={id} unit={exp.step_unit} />}
      {tab === "checkpoints" && <Checkpoints experimentId={id} metric={exp.metric} unit={exp.step_unit}
        version={exp.trials.map((t) => `${t.id}:${t.latest_checkpoint}:${t.state}`).join(",")} />}
      {tab === "config" && <ConfigView yaml={exp.config_yaml} />}
      {tab === "fork" && <ForkForm exp={exp} />}
    </div>
  );
}

function Summary({ exp, bestId, mayEdit, onChanged }: { exp: ExperimentDetail; bestId: number | null; mayEdit: boolean; onChanged: () => Promise<unknown> }) {
  const [editing, setEditing] = useState(false);
  const [description, setDescription] = useState(exp.description);
  const [newLabel, setNewLabel] = useState("");
  const [error, setError] = useState<unknown>(null);
  const patch = async (body: Record<string, unknown>) => {
    setError(null);
    try {
      await api(`/experiments/${exp.id}`, { method: "PATCH", json: body });
      await onChanged();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <div className="summary">
      <dl>
        <dt>Description</dt>
        <dd>
          {editing ? (
            <form onSubmit={(e) => { e.preventDefault(); setEditing(false); void patch({ description }); }}>
              <input aria-label="description" value={description} onChange={(e) => setDescription(e.target.value)} autoFocus />
              <button type="submit">save</button>
            </form>
          ) : (
            <>
              <span data-testid="description">{exp.description}</span>{" "}
              {mayEdit && <button className="link" onClick={() => { setDescription(exp.description); setEditing(true); }}>edit</button>}
            </>
          )}
        </dd>
        <dt>Labels</dt>
        <dd data-testid="labels">
          {exp.labels.map((l) => (
            <span className="label" key={l}>
              {l}
              {mayEdit && <button className="link" aria-label={`remove label ${l}`} onClick={() => void patch({ labels: exp.labels.filter((x) => x !== l) })}>×</button>}
            </span>
          ))}
          {mayEdit && (
            <form className="inline" onSubmit={(e) => { e.preventDefault(); if (newLabel && !exp.labels.includes(newLabel)) void patch({ labels: [...exp.labels, newLabel] }); setNewLabel(""); }}>
              <input aria-label="new label" placeholder="add label" value={newLabel} onChange={(e) => setNewLabel(e.target.value)} />
            </form>
          )}
        </dd>
        <dt>Owner</dt><dd>{exp.owner}</dd>
        <dt>Searcher</dt><dd>{exp.searcher} · {exp.metric} ({exp.smaller_is_better ? "smaller" : "larger"} is better)</dd>
        <dt>Best</dt><dd data-testid="best-metric">{exp.best_metric == null
          ? <span className="muted">{TERMINAL.has(exp.state) ? "none: no trial validated" : "no validation yet"}</span>
          : formatNumber(exp.best_metric)}
          {bestId != null && <> · <Link to={`/experiments/${exp.id}/trials/${bestId}`}>trial {bestId}</Link></>}</dd>
        <dt>Progress</dt><dd><Progress value={exp.progress} state={exp.state} /></dd>
        <dt>Trials</dt><dd>{exp.trials.length}</dd>
        <FailedTrials experimentId={exp.id} trials={exp.trials} />
        <dt>Started</dt><dd data-testid="started">{formatTime(exp.start_time)} · {formatDuration(exp.duration)}
          {exp.state === "PAUSED" && <span className="muted"> until it paused</span>}</dd>
        {exp.parent_id != null && (<><dt>Forked from</dt><dd><Link to={`/experiments/${exp.parent_id}`}>experiment {exp.parent_id}</Link></dd></>)}
      </dl>
      <ErrorLine error={error} />
    </div>
  );
}

/** Links to the failed trials (an ERROR experiment's page said nothing of why): each
 * trial's page shows its error at the top; hovering one shows its ``error_summary``.
 * Nothing when none failed. */
export function FailedTrials({ experimentId, trials }: { experimentId: number; trials: Trial[] }) {
  const failed = trials.filter((t) => t.state === "ERROR");
  if (failed.length === 0) return null;
  return (
    <>
      <dt>Failed</dt>
      <dd data-testid="failed-trials">
        {failed.map((t, i) => (
          <span key={t.id}>{i > 0 && ", "}<Link to={`/experiments/${experimentId}/trials/${t.id}`} title={t.error_summary ?? undefined}>trial {t.id}</Link></span>
        ))}
        <span className="muted"> · {failed.length === 1 ? "its page says" : "their pages say"} why</span>
      </dd>
    </>
  );
}

/** More hyperparameters than this, a column each, made the trials table scroll sideways on
 * an 800-pixel window: below 1280 pixels they fold into one cell (``HparamPairs``); wider,
 * each keeps its sortable column. */
export const FOLD_HPARAMS = 4;

/** A trial's hyperparameters in one cell, ``name value`` pairs that wrap between pairs. */
function HparamPairs({ names, values }: { names: string[]; values: Record<string, unknown> }) {
  return (
    <span className="hp-pairs" data-testid="hparam-pairs">
      {names.filter((n) => n in values).map((n) => (
        <span className="hp-pair" key={n}><span className="muted"><Breakable text={n} /></span> {formatNumber(values[n])}</span>
      ))}
    </span>
  );
}

/** Hyperparameter names in first-seen order, split into those that differ between trials
 * (a column each) and those with one value in every trial (``[name, value]``, said once
 * above the table). As ``det`` drops id columns with one value, it takes two trials or
 * more to call one constant; a name some trial lacks varies. */
export function splitConstantHparams(trials: Record<string, unknown>[]): { varying: string[]; constant: [string, unknown][] } {
  const names: string[] = [];
  const seen = new Set<string>();
  for (const h of trials) for (const k of Object.keys(h)) if (!seen.has(k)) { seen.add(k); names.push(k); }
  if (trials.length < 2) return { varying: names, constant: [] };
  const varying: string[] = [];
  const constant: [string, unknown][] = [];
  for (const n of names) {
    const first = JSON.stringify(trials[0][n]);
    if (trials.every((h) => n in h && JSON.stringify(h[n]) === first)) constant.push([n, trials[0][n]]);
    else varying.push(n);
  }
  return { varying, constant };
}

function TrialsTable({ exp, bestId, signedIn, waits }: { exp: ExperimentDetail; bestId: number | null; signedIn: boolean; waits: Waits }) {
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const toggle = (id: number, on: boolean) => {
    const s = new Set(selected);
    if (on) s.add(id); else s.delete(id);
    setSelected(s);
  };
  const flat = useMemo(() => new Map(exp.trials.map((t) => [t.id, flattenHparams(t.hparams)])), [exp.trials]);
  const { varying: names, constant } = useMemo(() => splitConstantHparams([...flat.values()]), [flat]);
  const folded = names.length > FOLD_HPARAMS;
  const columns: Column<Trial>[] = [
    { key: "id", title: "Trial", value: (t) => t.id, render: (t) => <Link to={`/experiments/${exp.id}/trials/${t.id}`}>{t.id}{t.id === bestId ? " ★" : ""}</Link> },
    { key: "state", title: "State", value: (t) => t.state,
      render: (t) => <><StateBadge state={t.state} /><WaitingNote wait={waits.trials[t.id]} /></> },
    { key: "batches", title: stepsTitle(exp.step_unit), value: (t) => t.total_batches },
    // Headers wrap (metric and hyperparameter names after their underscores and dots): the
    // table fits an 800-pixel window, as the experiment list does.
    { key: "best", title: <>Best <Breakable text={exp.metric} /></>, value: (t) => t.best_validation, className: "wrap",
      render: (t) => formatNumber(t.best_validation) },
    { key: "restarts", title: "Restarts", value: (t) => t.restarts },
    ...names.map((n) => ({ key: `hp:${n}`, title: <Breakable text={n} />, value: (t: Trial) => flat.get(t.id)?.[n],
      className: folded ? "wrap hp-column" : "wrap", render: (t: Trial) => formatNumber(flat.get(t.id)?.[n]) })),
    ...(folded ? [{ key: "hparams", title: "Hyperparameters", value: () => null, sortable: false, className: "hp-folded",
      render: (t: Trial) => <HparamPairs names={names} values={flat.get(t.id) ?? {}} /> }] : []),
  ];
  const ids = [...selected].sort((a, b) => a - b);
  return (
    <section>
      <div className="actions">
        <TaskLauncher key={ids.join(",")} label={`TensorBoard for ${counted(ids.length, "selected trial")}`} testId="tensorboard-trials"
          request={{ kind: "tensorboard", trial_ids: ids }} disabled={!signedIn || ids.length === 0}
          reason={signedIn ? "select trials in the table first" : "sign in to start a TensorBoard"} />
      </div>
      {constant.length > 0 && (
        <p className="muted" data-testid="constant-hparams">
          same in every trial: {constant.map(([n, v]) => `${n}=${formatNumber(v)}`).join(", ")}
        </p>
      )}
      <Table testId="trials-table" columns={columns} rows={exp.trials} rowKey={(t) => t.id} initialSort={{ key: "id" }}
        rowClass={(t) => (t.id === bestId ? "best" : undefined)}
        leadingHeader={<input type="checkbox" aria-label="select all trials" checked={selected.size === exp.trials.length && selected.size > 0}
          onChange={(e) => setSelected(e.target.checked ? new Set(exp.trials.map((t) => t.id)) : new Set())} />}
        leading={(t) => <input type="checkbox" aria-label={`select trial ${t.id}`} checked={selected.has(t.id)} onChange={(e) => toggle(t.id, e.target.checked)} />} />
    </section>
  );
}

/** Names of the hyperparameters the config declares ``type: log`` (dotted when nested). */
export function logHparamNames(space: Record<string, unknown>, prefix = ""): Set<string> {
  const out = new Set<string>();
  for (const [k, v] of Object.entries(space ?? {})) {
    if (!v || typeof v !== "object" || Array.isArray(v)) continue;
    const key = prefix ? `${prefix}.${k}` : k;
    const spec = v as Record<string, unknown>;
    if (spec.type === "log") out.add(key);
    else if (spec.type === undefined || spec.type === "object") for (const n of logHparamNames((spec.vals as Record<string, unknown>) ?? spec, key)) out.add(n);
  }
  return out;
}

function HparamTab({ exp, bestId }: { exp: ExperimentDetail; bestId: number | null }) {
  const points = useMemo(() => exp.trials.map((t) => ({ trialId: t.id, hparams: flattenHparams(t.hparams), metric: t.best_validation })), [exp.trials]);
  const names = useMemo(() => {
    const s = new Set<string>();
    for (const p of points) for (const [k, v] of Object.entries(p.hparams)) if (new Set(points.map((q) => JSON.stringify(q.hparams[k]))).size > 1 && v !== undefined) s.add(k);
    return [...s];
  }, [points]);
  const logNames = useMemo(() => logHparamNames(exp.config.hyperparameters ?? {}), [exp.config]);
  const [importance, setImportance] = useState<{ importance: Importance[]; trials: number } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const validated = exp.trials.filter((t) => t.best_validation != null).length;
  useEffect(() => {
    api<{ importance: Importance[]; trials: number }>(`/ui/experiments/${exp.id}/hparam-importance`).then(setImportance, setError);
  }, [exp.id, validated]);
  const curves = useExperimentCurves(exp.id, "validation", exp.metric);
  if (!names.length) return <p className="muted">No hyperparameter varies across trials.</p>;
  const common = { points, names, logNames, metricName: exp.metric, smallerIsBetter: exp.smaller_is_better, bestTrialId: bestId };
  return (
    <section className="hp-views">
      <h2>Hyperparameter importance</h2>
      <ErrorLine error={error} />
      {importance && <ImportanceBars rows={importance.importance} trials={importance.trials} metricName={exp.metric} />}
      <h2>Parallel coordinates</h2>
      <ParallelCoordinates {...common} />
      <h2>Slice plots: {exp.metric} against each hyperparameter</h2>
      <SlicePlots {...common} />
      <h2>Contour plot</h2>
      <ContourPlot {...common} />
      <h2>Intermediate values: {exp.metric} of every trial</h2>
      <Curves data={curves.data} trials={exp.trials} bestTrialId={bestId} testId="intermediate-values" unit={exp.step_unit} />
    </section>
  );
}

function ConfigView({ yaml }: { yaml: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(yaml);
    } catch {
      const area = document.createElement("textarea");
      area.value = yaml;
      document.body.appendChild(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    setCopied(true);
  };
  return (
    <section>
      <p className="muted">The config with every default the master filled in; the fork tab starts from the config as submitted.</p>
      <button onClick={() => void copy()}>{copied ? "copied" : "copy"}</button>
      <pre className="config" data-testid="config-yaml">{yaml}</pre>
    </section>
  );
}
