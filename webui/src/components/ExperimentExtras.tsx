/** The rungs of adaptive searchers, and forking an experiment with an edited config. */
import { useEffect, useState } from "react";
import { Link, useNavigate } from "react-router";
import { api, post, type ExperimentDetail } from "../api";
import { counted, formatNumber, stepsText } from "../format";
import { ErrorLine } from "./Bits";

interface RungsResponse {
  metric: string;
  rungs: { length: number; trials: { trial_id: number; batches: number; metric: number | null; promoted: boolean }[] }[];
}

export function Rungs({ experimentId, unit }: { experimentId: number; unit?: string }) {
  const [data, setData] = useState<RungsResponse | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api<RungsResponse>(`/ui/experiments/${experimentId}/rungs`).then(setData).catch(setError);
  }, [experimentId]);
  if (error) return <ErrorLine error={error} />;
  if (!data) return <p className="muted">Loading…</p>;
  if (!data.rungs.length) return <p className="muted">No trial has finished a rung yet.</p>;
  return (
    <div className="rungs" data-testid="rungs">
      {data.rungs.map((r, i) => (
        <div className="rung" key={r.length}>
          <h3>Rung {i + 1}: {stepsText(r.length, unit)} <small className="muted">{counted(r.trials.length, "trial")}, {r.trials.filter((t) => t.promoted).length} went on</small></h3>
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
  );
}

export function ForkForm({ exp }: { exp: ExperimentDetail }) {
  const [yaml, setYaml] = useState(exp.config_yaml);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const navigate = useNavigate();
  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      const { b64_tgz } = await api<{ b64_tgz: string }>(`/experiments/${exp.id}/model_def`);
      const created = await post<{ id: number }>("/experiments", { config: yaml, model_def: b64_tgz, activate: true });
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
