/** The rungs of adaptive searchers, and forking an experiment with an edited config. */
import { useEffect, useState } from "react";
import { Link, useNavigate } from "react-router";
import { api, post, type ExperimentDetail } from "../api";
import { counted, formatNumber, stepsText } from "../format";
import { ErrorLine } from "./Bits";

interface RungTrial { trial_id: number; metric: number | null; promoted: boolean }
interface Rung { bracket?: number; rung?: number; length: number; trials: RungTrial[] }

/** The searcher's own rungs: `rungs` bracket by bracket, each with its `length` in the
 * searcher's `unit` (a `time_metric` value for a time-metric search). */
export interface RungsResponse {
  metric: string;
  unit?: string | null;
  time_metric?: string | null;
  brackets?: { bracket: number; lengths: number[] }[];
  rungs: Rung[];
}

/** The rungs grouped by bracket, in the order the master gives them. */
export function rungsByBracket(rungs: Rung[]): [number, Rung[]][] {
  const groups = new Map<number, Rung[]>();
  for (const r of rungs) {
    const b = r.bracket ?? 0;
    groups.set(b, [...(groups.get(b) ?? []), r]);
  }
  return [...groups];
}

export function Rungs({ experimentId, unit }: { experimentId: number; unit?: string }) {
  const [data, setData] = useState<RungsResponse | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api<RungsResponse>(`/ui/experiments/${experimentId}/rungs`).then(setData).catch(setError);
  }, [experimentId]);
  if (error) return <ErrorLine error={error} />;
  if (!data) return <p className="muted">Loading…</p>;
  if (!data.rungs.some((r) => r.trials.length)) return <p className="muted">No trial has finished a rung yet.</p>;
  const groups = rungsByBracket(data.rungs);
  const many = groups.length > 1;
  const lengthText = (n: number) =>
    data.time_metric ? `${data.time_metric} ${formatNumber(n)}` : stepsText(n, data.unit ?? unit);
  return (
    <div className="rungs" data-testid="rungs">
      {groups.map(([b, rungs]) => (
        <div className="bracket" key={b} data-testid={`bracket-${b + 1}`}>
          {rungs.map((r, i) => (
            <div className="rung" key={`${b}-${r.rung ?? i}`}>
              <h3>
                {many ? `Bracket ${b + 1} · ` : ""}Rung {(r.rung ?? i) + 1}: {lengthText(r.length)}{" "}
                <small className="muted">{counted(r.trials.length, "trial")}, {r.trials.filter((t) => t.promoted).length} went on</small>
              </h3>
              <ol>
                {r.trials.map((t) => (
                  <li key={t.trial_id} className={t.promoted ? "promoted" : ""}>
                    <Link to={`/experiments/${experimentId}/trials/${t.trial_id}`}>trial {t.trial_id}</Link>{" "}
                    {data.metric} {formatNumber(t.metric)} {t.promoted ? "→ promoted" : ""}
                  </li>
                ))}
              </ol>
            </div>
          ))}
        </div>
      ))}
    </div>
  );
}

/** A new experiment with ``exp``'s model definition and a config edited from the one
 * ``exp`` was submitted with (not the expanded one: no defaults the user never wrote). */
export function ForkForm({ exp }: { exp: ExperimentDetail }) {
  const [yaml, setYaml] = useState(exp.original_config_yaml);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const navigate = useNavigate();
  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      const { b64_tgz } = await api<{ b64_tgz: string }>(`/experiments/${exp.id}/model_def`);
      const created = await post<{ id: number }>("/experiments", { config: yaml, model_def: b64_tgz, activate: true, parent_id: exp.id });
      navigate(`/experiments/${created.id}`);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="fork">
      <p>A new experiment with the same model definition as <Link to={`/experiments/${exp.id}`}>experiment {exp.id}</Link> and this config:</p>
      <textarea aria-label="fork config" rows={24} value={yaml} onChange={(e) => setYaml(e.target.value)} spellCheck={false} />
      <div><button disabled={busy} onClick={() => void submit()}>create experiment</button></div>
      <ErrorLine error={error} />
    </section>
  );
}
