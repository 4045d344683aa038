/** The model registry: every registered model, searchable by name, newest first; search
 * and sort in the URL; live (a model created, edited or given a version elsewhere shows). */
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { api, type RegistryModel } from "../api";
import { follow } from "../events";
import { useLoadWhenChanged, useLoaded } from "../loaded";
import { formatTime } from "../format";
import Table, { type Column } from "../components/Table";
import { ErrorLine, Metadata } from "../components/Bits";
import { modelPath, SignedOutHint } from "../components/Registry";
import { usePageTitle } from "../title";

/** Columns the API sorts by (``GET /models?sort_by=``). */
const SORTABLE = new Set(["name", "description", "creation_time", "last_updated_time"]);

export default function ModelList() {
  usePageTitle("Models");
  const [params, setParams] = useSearchParams();
  const [channelError, setChannelError] = useState<unknown>(null);
  const search = params.get("name") ?? "";
  const sortKey = SORTABLE.has(params.get("sort") ?? "") ? params.get("sort")! : "creation_time";
  const desc = (params.get("order") ?? "desc") === "desc";
  const query = useMemo(
    () => new URLSearchParams({ sort_by: sortKey, order_by: desc ? "desc" : "asc", name: search }).toString(),
    [sortKey, desc, search],
  );

  const fetcher = useCallback(async () => (await api<{ models: RegistryModel[] }>(`/models?${query}`)).models, [query]);
  const { data: rows, error: loadError, load } = useLoaded(fetcher);
  const error = loadError ?? channelError;
  useLoadWhenChanged(load, query);
  // Live: any change of the registry reloads the list, which the master filters and
  // sorts. The list loads when the channel connects (and at each reconnection, for
  // changes made while it was down), or without it when it is slow.
  const loadRef = useRef(load); // the search shown now: one channel for every search
  loadRef.current = load;
  useEffect(() => follow(
    () => ({ models: true }),
    (name) => { if (name === "models") void loadRef.current(); },
    { load: () => loadRef.current(), onRefused: setChannelError },
  ), []);

  const set = (changes: Record<string, string>) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      if (v) next.set(k, v);
      else next.delete(k);
    }
    setParams(next);
  };

  const columns: Column<RegistryModel>[] = [
    { key: "name", title: "Name", value: (m) => m.name, render: (m) => <Link to={modelPath(m.name)}>{m.name}</Link> },
    { key: "description", title: "Description", value: (m) => m.description,
      render: (m) => <span className="desc" title={m.description || undefined}>{m.description || <span className="muted">(none)</span>}</span> },
    { key: "num_versions", title: "Versions", value: (m) => m.num_versions, sortable: false },
    { key: "last_updated_time", title: "Last updated", value: (m) => m.last_updated_time, render: (m) => formatTime(m.last_updated_time) },
    { key: "creation_time", title: "Created", value: (m) => m.creation_time, render: (m) => formatTime(m.creation_time) },
    { key: "metadata", title: "Metadata", value: (m) => m.metadata, sortable: false, render: (m) => <Metadata value={m.metadata} /> },
  ];

  return (
    <div>
      <h1>Models</h1>
      <SignedOutHint next="/models" />
      <div className="filters">
        <input placeholder="Search model names" aria-label="search models" defaultValue={search}
          onKeyDown={(e) => { if (e.key === "Enter") set({ name: (e.target as HTMLInputElement).value }); }}
          onBlur={(e) => { if (e.target.value !== search) set({ name: e.target.value }); }} />
      </div>
      <ErrorLine error={error} />
      {rows == null ? (error ? null : <p className="muted">Loading…</p>) : rows.length === 0 ? (
        search ? <p className="muted" data-testid="no-match">No model's name contains “{search}”.</p> : <EmptyRegistry />
      ) : (
        <Table testId="model-table" columns={columns} rows={rows} rowKey={(m) => m.name}
          sort={{ key: sortKey, desc }} onSort={(key, d) => set({ sort: key, order: d ? "desc" : "asc" })} />
      )}
    </div>
  );
}

/** What an empty registry shows: how to register a model. */
function EmptyRegistry() {
  return (
    <div className="hint" data-testid="empty-registry">
      <p>No models registered yet. Register a checkpoint (its UUID is on an experiment's or trial's
        checkpoints, or from <code>det checkpoint list EXPERIMENT_ID</code>) as a version of a model:</p>
      <pre className="config">{`det model create NAME --description "what it is"
det model register-version NAME CHECKPOINT_UUID`}</pre>
      <p>or from Python:</p>
      <pre className="config">{`from determined.experimental import Determined
model = Determined(MASTER_URL).create_model("NAME")
model.register_version(CHECKPOINT_UUID)`}</pre>
    </div>
  );
}
