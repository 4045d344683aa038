/** Small pieces: state badge, progress bar, error and loading lines. */

export function StateBadge({ state }: { state: string }) {
  return <span className={`state state-${state.toLowerCase()}`} data-testid="state">{state}</span>;
}

export function Progress({ value }: { value: number }) {
  const pct = Math.round(Math.min(1, Math.max(0, value || 0)) * 100);
  return (
    <span className="progress" title={`${pct}%`}>
      <span className="bar"><span style={{ width: `${pct}%` }} /></span>
      <em>{pct}%</em>
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
