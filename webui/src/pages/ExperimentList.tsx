/** The experiment list: filters, sort and pagination in the URL; batch actions; live updates. */
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { api, canEdit, post, type ExperimentRow } from "../api";
import { follow } from "../events";
import { useLoadWhenChanged, useLoaded } from "../loaded";
import { counted, formatDuration, formatNumber } from "../format";
import { useSession } from "../session";
import Table, { type Column } from "../components/Table";
import { Breakable, ConfirmButton, ErrorLine, Labels, Progress, StateBadge, When } from "../components/Bits";
import { useWaits, WaitingNote } from "../components/Waiting";
import { usePageTitle } from "../title";

const STATES = ["ACTIVE", "PAUSED", "STOPPING_CANCELED", "STOPPING_COMPLETED", "STOPPING_ERROR", "COMPLETED", "CANCELED", "ERROR"];
const ACTIONS = ["pause", "activate", "cancel", "kill", "archive", "unarchive"] as const;
const PAGE_SIZES = [25, 100, 1000];

interface ListResponse {
  experiments: ExperimentRow[];
  total: number;
  owners: string[];
  labels: string[];
}

export default function ExperimentList() {
  usePageTitle("Experiments");
  const { user } = useSession();
  const [params, setParams] = useSearchParams();
  const [channelError, setChannelError] = useState<unknown>(null);
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const [actionErrors, setActionErrors] = useState<string[]>([]);
  const [loadMs, setLoadMs] = useState<number | null>(null);
  const [paintAt, setPaintAt] = useState<number | null>(null);
  const started = useRef(0);
  const loadedAt = useRef(Date.now());

  const get = (k: string, d = "") => params.get(k) ?? d;
  const limit = Number(get("limit", "100"));
  const page = Number(get("page", "0"));
  const query = useMemo(() => {
    const q = new URLSearchParams({
      sort: get("sort", "id"),
      order: get("order", "desc"),
      offset: String(page * limit),
      limit: String(limit),
      archived: get("archived", "false"),
    });
    for (const k of ["state", "owner", "label", "text"]) if (get(k)) q.set(k, get(k));
    return q.toString();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [params]);

  const fetcher = useCallback(() => {
    started.current = performance.now();
    loadedAt.current = Date.now();
    return api<ListResponse>(`/ui/experiments?${query}`);
  }, [query]);
  const { data, error: loadError, load, update } = useLoaded(fetcher);
  const { waits, onEvent: onWaitingEvent } = useWaits();
  const error = loadError ?? channelError;
  const dataRef = useRef(data);
  dataRef.current = data;
  const loadRef = useRef(load); // the filters shown now: one channel for all of them
  loadRef.current = load;

  useLoadWhenChanged(load, query);

  useLayoutEffect(() => {
    if (!data || !started.current) return;
    // Runs as soon as the rows are in the DOM (a passive effect or rAF waits for a frame).
    const now = performance.now();
    setLoadMs(now - started.current);
    setPaintAt((at) => at ?? now); // the first page's rows, since navigation
    started.current = 0;
  }, [data]);

  // Live: merge changed rows; a new or removed experiment reloads the page of the list.
  // The list loads when the channel connects (and again at each reconnection, for changes
  // made while it was down), or without it when it is slow; another filter loads at once.
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | null = null;
    const stop = follow(() => ({ experiments: true, waiting: true }), (name, payload) => {
      if (onWaitingEvent(name, payload) || name !== "experiments") return;
      const changed = new Map<number, ExperimentRow>(payload.changed.map((e: ExperimentRow) => [e.id, e]));
      update((d) => ({ ...d, experiments: d.experiments.map((e) => changed.get(e.id) ?? e) }));
      // A new experiment (or a deleted one on this page) reloads the page; changes of
      // experiments on other pages do not.
      const known = new Set((dataRef.current?.experiments ?? []).map((e) => e.id));
      const appeared = payload.changed.some((e: ExperimentRow) => !known.has(e.id) && e.start_time != null && Date.parse(e.start_time) > loadedAt.current - 2000)
        || payload.removed.some((id: number) => known.has(id));
      if (appeared && !timer) timer = setTimeout(() => { timer = null; void loadRef.current(); }, 300);
    }, { load: () => loadRef.current(), onRefused: setChannelError });
    return () => {
      stop();
      if (timer) clearTimeout(timer);
    };
  }, [update, onWaitingEvent]);

  const set = (changes: Record<string, string | null>) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      if (v == null || v === "") next.delete(k);
      else next.set(k, v);
    }
    if (!("page" in changes)) next.delete("page");
    setParams(next);
    setSelected(new Set());
  };

  const rows = data?.experiments ?? [];
  const runAction = async (verb: (typeof ACTIONS)[number]) => {
    const errors: string[] = [];
    await Promise.all(
      [...selected].map((id) => post(`/experiments/${id}/${verb}`).catch((e) => errors.push(`#${id}: ${e.message}`))),
    );
    setActionErrors(errors);
    await load();
  };

  const columns: Column<ExperimentRow>[] = [
    { key: "id", title: "ID", value: (e) => e.id, render: (e) => <Link to={`/experiments/${e.id}`}>{e.id}</Link> },
    { key: "description", title: "Description", value: (e) => e.description,
      render: (e) => <>
        <Link to={`/experiments/${e.id}`} className="desc" title={e.description || undefined}>{e.description || <span className="muted">(none)</span>}</Link>
        {/* Below 1000 pixels the Owner column goes: its owner shows under the description. */}
        <div className="muted narrow-only" data-testid="row-owner"><small>{e.owner}</small></div>
      </> },
    { key: "labels", title: "Labels", value: (e) => e.labels.join(","), render: (e) => <Labels labels={e.labels} />, sortable: false, className: "wrap" },
    { key: "owner", title: "Owner", value: (e) => e.owner, className: "wide-only" },
    { key: "state", title: "State", value: (e) => e.state, className: "wrap", render: (e) => <><StateBadge state={e.state} />{e.state === "ACTIVE" ? <WaitingNote wait={waits.experiments[e.id]} /> : null}</> },
    { key: "progress", title: "Progress", value: (e) => e.progress, render: (e) => <Progress value={e.progress} state={e.state} /> },
    { key: "num_trials", title: "Trials", value: (e) => e.num_trials },
    { key: "best_metric", title: "Best metric", value: (e) => e.best_metric,
      className: "wrap",
      render: (e) => e.best_metric == null ? "" : <span title={e.metric}><span className="nowrap">{formatNumber(e.best_metric)}</span> <small className="muted metric-name"><Breakable text={e.metric} /></small></span> },
    { key: "start_time", title: "Started", value: (e) => e.start_time, className: "wrap", render: (e) => <When iso={e.start_time} /> },
    // Below 1000 pixels the list fits its window without it (the start time and state say much).
    { key: "duration", title: "Duration", value: (e) => e.duration, className: "wide-only", render: (e) => formatDuration(e.duration) },
  ];
  const editable = rows.filter((e) => selected.has(e.id) && canEdit(user, e.owner));
  const total = data?.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / limit));

  return (
    <div>
      <h1>Experiments</h1>
      <div className="filters">
        <input placeholder="Search id, description, label, owner" aria-label="search" defaultValue={get("text")}
          onKeyDown={(e) => { if (e.key === "Enter") set({ text: (e.target as HTMLInputElement).value }); }}
          onBlur={(e) => { if (e.target.value !== get("text")) set({ text: e.target.value }); }} />
        <select aria-label="state" value={get("state")} onChange={(e) => set({ state: e.target.value })}>
          <option value="">any state</option>
          {STATES.map((s) => <option key={s}>{s}</option>)}
        </select>
        <select aria-label="owner" value={get("owner")} onChange={(e) => set({ owner: e.target.value })}>
          <option value="">any owner</option>
          {data?.owners.map((o) => <option key={o}>{o}</option>)}
        </select>
        <select aria-label="label" value={get("label")} onChange={(e) => set({ label: e.target.value })}>
          <option value="">any label</option>
          {data?.labels.map((l) => <option key={l}>{l}</option>)}
        </select>
        <select aria-label="archived" value={get("archived", "false")} onChange={(e) => set({ archived: e.target.value })}>
          <option value="false">not archived</option>
          <option value="true">archived</option>
          <option value="any">archived or not</option>
        </select>
      </div>
      <div className="actions">
        <span className="muted">{selected.size} selected</span>
        {ACTIONS.map((a) => (a === "kill" || a === "cancel" ? (
          <ConfirmButton key={a} label={a} testId={`batch-${a}`} disabled={!editable.length} confirmLabel={`yes, ${a} them`}
            question={`${a === "kill" ? "Kill" : "Cancel"} ${counted(editable.length, "experiment")}?`}
            onConfirm={() => void runAction(a)} />
        ) : (
          <button key={a} disabled={!editable.length} onClick={() => void runAction(a)} data-testid={`batch-${a}`}>{a}</button>
        )))}
      </div>
      {actionErrors.map((m) => <p key={m} className="error">{m}</p>)}
      <ErrorLine error={error} />
      <Table
        testId="experiment-table"
        columns={columns}
        rows={rows}
        empty={data == null ? undefined  // not loaded yet
          : ["state", "owner", "label", "text"].some((k) => get(k)) || get("archived") === "true"
            ? "No experiments match these filters."
            : <>No experiments yet: <code>det experiment create CONFIG MODEL_DIR</code> starts one.</>}
        rowKey={(e) => e.id}
        sort={{ key: get("sort", "id"), desc: get("order", "desc") === "desc" }}
        onSort={(key, desc) => set({ sort: key, order: desc ? "desc" : "asc" })}
        leadingHeader={<input type="checkbox" aria-label="select all" checked={rows.length > 0 && selected.size === rows.length}
          onChange={(e) => setSelected(e.target.checked ? new Set(rows.map((r) => r.id)) : new Set())} />}
        leading={(e) => <input type="checkbox" aria-label={`select ${e.id}`} checked={selected.has(e.id)}
          onChange={(ev) => { const s = new Set(selected); if (ev.target.checked) s.add(e.id); else s.delete(e.id); setSelected(s); }} />}
      />
      <div className="pager" data-load-ms={loadMs ?? ""} data-paint-at={paintAt ?? ""} data-testid="pager">
        <button disabled={page <= 0} onClick={() => set({ page: String(page - 1) })}>‹ prev</button>
        <span>page {page + 1} of {pages} · {total} experiments</span>
        <button disabled={page + 1 >= pages} onClick={() => set({ page: String(page + 1) })}>next ›</button>
        <select aria-label="page size" value={limit} onChange={(e) => set({ limit: e.target.value })}>
          {PAGE_SIZES.map((n) => <option key={n} value={n}>{n} per page</option>)}
        </select>
      </div>
    </div>
  );
}
