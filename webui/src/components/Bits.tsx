/** Small pieces: state badge, progress bar, confirm button, error and loading lines, times and ids. */
import { useState, type ReactNode } from "react";
import { progressLabel, timeParts } from "../format";

export function StateBadge({ state }: { state: string }) {
  return <span className={`state state-${state.toLowerCase()}`} data-testid="state">{state}</span>;
}

/** The search's progress; an experiment that ended in ERROR or CANCELED shows that instead
 * of a percentage (its searcher counted the failed trials as done). */
export function Progress({ value, state = "" }: { value: number; state?: string }) {
  const label = progressLabel(state, value);
  const ended = state === "ERROR" || state === "CANCELED";
  const pct = ended ? 0 : Math.round(Math.min(1, Math.max(0, value || 0)) * 100);
  return (
    <span className={`progress${ended ? " ended" : ""}`} title={label} data-testid="progress">
      <span className="bar"><span style={{ width: `${pct}%` }} /></span>
      <em>{label}</em>
    </span>
  );
}

/** A button that asks before it acts: the first click opens a small dialog naming what
 * will happen; only its confirm button calls ``onConfirm``. */
export function ConfirmButton({ label, question, confirmLabel, onConfirm, disabled, title, testId }: {
  label: ReactNode;
  question: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  disabled?: boolean;
  title?: string;
  testId?: string;
}) {
  const [open, setOpen] = useState(false);
  return (
    <span className="confirm">
      <button data-testid={testId} disabled={disabled} title={title} onClick={() => setOpen(true)}>{label}</button>
      {open && (
        <span className="confirm-dialog" role="dialog" aria-label={confirmLabel}>
          <span>{question}</span>
          <button className="danger" onClick={() => { setOpen(false); onConfirm(); }}>{confirmLabel}</button>
          <button onClick={() => setOpen(false)}>no, keep it</button>
        </span>
      )}
    </span>
  );
}

export function ErrorLine({ error }: { error: unknown }) {
  if (!error) return null;
  return <p className="error" role="alert">{error instanceof Error ? error.message : String(error)}</p>;
}

export function Labels({ labels }: { labels: string[] }) {
  return (
    <span className="labels">
      {labels.map((l) => (
        <span className="label" key={l}>{l}</span>
      ))}
    </span>
  );
}

/** User metadata (a checkpoint's, a model's) in one line of JSON; nothing when there is none. */
export function Metadata({ value }: { value: Record<string, unknown> | null | undefined }) {
  // None: an empty cell ("{}" on every row was noise).
  if (value == null || Object.keys(value).length === 0) return null;
  return <code className="small">{JSON.stringify(value)}</code>;
}

/** A time as date and time of day, which a narrow column puts on two lines. */
export function When({ iso }: { iso: string | null | undefined }) {
  const parts = timeParts(iso);
  if (!parts) return null;
  // Reads as formatTime's text does ("date, time"), which it is the wrappable form of.
  return <span className="when" title={iso ?? undefined}><span>{parts[0]},</span> <span>{parts[1]}</span></span>;
}

/** A name such as ``validation_loss`` that may break after its underscores, dots and
 * slashes (never inside a word) where a column is narrow. */
export function Breakable({ text }: { text: string }) {
  const parts = text.split(/(?<=[_./])/);
  return <>{parts.map((p, i) => <span key={i}>{i ? <wbr /> : null}{p}</span>)}</>;
}

/** An id such as a UUID, on one line where there is room, else broken after its hyphens
 * (copying it copies the id whole). */
export function BreakableId({ id }: { id: string }) {
  const parts = id.split("-");
  return <code className="id">{parts.map((p, i) => <span key={i}>{i ? <>-<wbr /></> : null}{p}</span>)}</code>;
}
