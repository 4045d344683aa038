import { useState, type FormEvent } from "react";
import { useNavigate, useSearchParams } from "react-router";
import { useSession } from "../session";
import { ErrorLine } from "../components/Bits";
import { usePageTitle } from "../title";

export default function Login() {
  usePageTitle("Sign in");
  const { signIn, ended } = useSession();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(username, password);
      const next = params.get("next");
      navigate(next && next.startsWith("/") && !next.startsWith("//") ? next : "/experiments", { replace: true });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="login" onSubmit={submit}>
      <h1>Sign in</h1>
      {ended && <p className="muted" data-testid="session-ended">Your session has ended (it expired or was signed out): sign in again to go on.</p>}
      <label>
        User
        <input name="username" autoFocus value={username} onChange={(e) => setUsername(e.target.value)} />
      </label>
      <label>
        Password
        <input name="password" type="password" value={password} onChange={(e) => setPassword(e.target.value)} />
      </label>
      <button type="submit" disabled={busy || !username}>Sign in</button>
      <ErrorLine error={error} />
    </form>
  );
}
