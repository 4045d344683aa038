/** One registered model: description and metadata (editable when signed in), and its
 * versions with their checkpoints, trials and validation metrics; live (a version
 * registered or an edit made elsewhere shows). */
import { useCallback, useEffect, useState } from "react";
import { Link, useParams } from "react-router";
import { api, type ModelVersion, type RegistryModel } from "../api";
import { follow } from "../events";
import { useLoaded } from "../loaded";
import { formatNumber, formatTime, validationMetrics } from "../format";
import Table, { type Column } from "../components/Table";
import { Breakable, BreakableId, ErrorLine, When } from "../components/Bits";
import { modelPath, SignedOutHint, useSignedIn } from "../components/Registry";
import { usePageTitle } from "../title";

interface VersionsResponse {
  model: RegistryModel;
  versions: ModelVersion[];
}

/** The validation metrics to show as columns besides the searcher's: every one reported,
 * less a searcher metric all versions share (it has its own column). */
export function otherMetricNames(versions: ModelVersion[]): string[] {
  const names = new Set(versions.flatMap((v) => Object.keys(validationMetrics(v.checkpoint.validation))));
  const searcher = new Set(versions.map((v) => v.searcher_metric.name));
  if (searcher.size === 1) names.delete([...searcher][0]);
  return [...names].sort();
}

export default function ModelPage() {
  const name = useParams().name ?? "";
  usePageTitle(name, "Models");
  const path = modelPath(name);
  const fetcher = useCallback(() => api<VersionsResponse>(`${path}/versions`), [path]);
  const { data, error: loadError, load, update } = useLoaded(fetcher);
  const [removedName, setRemovedName] = useState<string | null>(null); // another model's page follows anew
  const removed = removedName === name;
  const setRemoved = useCallback((gone: boolean) => setRemovedName(gone ? name : null), [name]);
  const [channelError, setChannelError] = useState<unknown>(null);
  const error = loadError ?? channelError;
  const reload = useCallback(async () => {
    const answer = await load();
    if (answer) setRemoved(false);
    return answer;
  }, [load, setRemoved]);
  // Live: the channel sends the model's versions when it changes (and a null model once
  // deleted). The page loads when it connects (and at each reconnection, for changes made
  // meanwhile), or without it when it is slow or refused: a model that does not exist
  // (or was deleted while the channel was down) is refused with a 404.
  useEffect(() => {
    if (removed) return;
    return follow(
      () => ({ model: name }),
      (event, payload: { model: RegistryModel | null; versions: ModelVersion[] }) => {
        if (event !== "model") return;
        if (payload.model) update(() => payload as VersionsResponse);
        else setRemoved(true);
      },
      {
        load: reload,
        onRefused: (e) => (e.status === 404 ? setRemoved(true) : setChannelError(e)),
      },
    );
  }, [removed, name, reload, update, setRemoved]);

  if (!data) {
    return error ? (
      <div>
        <h1><Link to="/models">Models</Link> / {name}</h1>
        <ErrorLine error={error} />
      </div>
    ) : <p className="muted">Loading…</p>;
  }
  return (
    <div>
      <h1><Link to="/models">Models</Link> / {data.model.name}</h1>
      <SignedOutHint next={path} />
      {removed && <p className="error" data-testid="model-removed">This model was deleted.</p>}
      <ErrorLine error={error} />
      <ModelSummary model={data.model} path={path} onChanged={reload} />
      <h2>Versions</h2>
      {data.versions.length === 0 ? <NoVersions name={data.model.name} /> : <Versions versions={data.versions} />}
    </div>
  );
}

function ModelSummary({ model, path, onChanged }: { model: RegistryModel; path: string; onChanged: () => Promise<unknown> }) {
  const signedIn = useSignedIn();
  const [editing, setEditing] = useState<"description" | "metadata" | null>(null);
  const [text, setText] = useState("");
  const [error, setError] = useState<unknown>(null);
  const save = async () => {
    setError(null);
    let body: Record<string, unknown>;
    if (editing === "metadata") {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text || "{}");
      } catch {
        parsed = null;
      }
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
        setError(new Error('metadata: expected a JSON object, e.g. {"stage": "production"}'));
        return;
      }
      body = { metadata: parsed };
    } else {
      body = { description: text };
    }
    try {
      await api(path, { method: "PATCH", json: body });
      setEditing(null);
      await onChanged();
    } catch (e) {
      setError(e);
    }
  };
  const edit = (what: "description" | "metadata") => {
    setError(null);
    setText(what === "description" ? model.description : JSON.stringify(model.metadata ?? {}, null, 2));
    setEditing(what);
  };
  const entries = Object.entries(model.metadata ?? {});
  return (
    <>
      <div className="summary">
        <dl>
          <dt>Description</dt>
          <dd>
            {editing === "description" ? (
              <form onSubmit={(e) => { e.preventDefault(); void save(); }}>
                <input aria-label="description" value={text} onChange={(e) => setText(e.target.value)} autoFocus />
                <button type="submit">save</button> <button type="button" onClick={() => setEditing(null)}>cancel</button>
              </form>
            ) : (
              <>
                <span data-testid="model-description">{model.description || <span className="muted">(none)</span>}</span>{" "}
                {signedIn && <button className="link" onClick={() => edit("description")}>edit</button>}
              </>
            )}
          </dd>
          <dt>Versions</dt><dd>{model.num_versions}</dd>
          <dt>Created</dt><dd>{formatTime(model.creation_time)}</dd>
          <dt>Last updated</dt><dd>{formatTime(model.last_updated_time)}</dd>
        </dl>
        {editing === "metadata" ? (
          <form className="metadata-edit" onSubmit={(e) => { e.preventDefault(); void save(); }}>
            <textarea aria-label="metadata" rows={6} cols={50} value={text} onChange={(e) => setText(e.target.value)} autoFocus />
            <div><button type="submit">save</button> <button type="button" onClick={() => setEditing(null)}>cancel</button></div>
          </form>
        ) : (
          <div>
            <table className="table hparams" data-testid="model-metadata">
              <thead><tr><th>Metadata</th><th>Value</th></tr></thead>
              <tbody>
                {entries.length === 0 ? <tr><td colSpan={2} className="muted">(none)</td></tr> : entries.map(([k, v]) => (
                  <tr key={k}><td>{k}</td><td>{typeof v === "object" ? JSON.stringify(v) : String(v)}</td></tr>
                ))}
              </tbody>
            </table>
            {signedIn && <button className="link" onClick={() => edit("metadata")}>edit metadata</button>}
          </div>
        )}
      </div>
      <ErrorLine error={error} />
    </>
  );
}

function Versions({ versions }: { versions: ModelVersion[] }) {
  const trialPath = (v: ModelVersion) => `/experiments/${v.checkpoint.experiment_id}/trials/${v.checkpoint.trial_id}`;
  const metric = (v: ModelVersion, name: string) => validationMetrics(v.checkpoint.validation)[name];
  const columns: Column<ModelVersion>[] = [
    { key: "version", title: "Version", value: (v) => v.version },
    { key: "creation_time", title: "Registered", value: (v) => v.creation_time, className: "wrap", render: (v) => <When iso={v.creation_time} /> },
    { key: "checkpoint", title: "Checkpoint", value: (v) => v.checkpoint.uuid, className: "wrap",
      render: (v) => <Link to={trialPath(v)} title={`trial ${v.checkpoint.trial_id}, which wrote it`}
        aria-label={v.checkpoint.uuid /* the id, not its pieces between the line breaks */}><BreakableId id={v.checkpoint.uuid} /></Link> },
    { key: "experiment", title: "Experiment", value: (v) => v.checkpoint.experiment_id,
      render: (v) => <Link to={`/experiments/${v.checkpoint.experiment_id}`}>{v.checkpoint.experiment_id}</Link> },
    { key: "trial", title: "Trial", value: (v) => v.checkpoint.trial_id, render: (v) => <Link to={trialPath(v)}>{v.checkpoint.trial_id}</Link> },
    { key: "batches", title: "Batches", value: (v) => v.checkpoint.total_batches },
    { key: "searcher_metric", title: "Searcher metric", value: (v) => v.searcher_metric.value, className: "wrap",
      render: (v) => v.searcher_metric.value == null ? <span className="muted">{v.searcher_metric.name}: no validation</span> : (
        <span title={`${v.searcher_metric.name} (${v.searcher_metric.smaller_is_better ? "smaller" : "larger"} is better)`}>
          <span className="nowrap">{formatNumber(v.searcher_metric.value)}</span> <small className="muted"><Breakable text={v.searcher_metric.name} /></small>
        </span>
      ) },
    ...otherMetricNames(versions).map((n) => ({
      key: `metric:${n}`, title: n, value: (v: ModelVersion) => metric(v, n), render: (v: ModelVersion) => formatNumber(metric(v, n)),
    })),
  ];
  return <Table testId="version-table" columns={columns} rows={versions} rowKey={(v) => v.version} initialSort={{ key: "version", desc: true }} />;
}

/** ``word`` as one shell word: bare when safe, else single-quoted. */
export function shellWord(word: string): string {
  return /^[\w.,:@%+=\/-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

function NoVersions({ name }: { name: string }) {
  return (
    <div className="hint" data-testid="no-versions">
      <p>No versions yet. Register a checkpoint as the next version:</p>
      <pre className="config">{`det model register-version ${shellWord(name)} CHECKPOINT_UUID`}</pre>
      <p>or from Python: <code>{`Determined(MASTER_URL).get_model(${JSON.stringify(name)}).register_version(CHECKPOINT_UUID)`}</code></p>
    </div>
  );
}
