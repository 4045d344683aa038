import { useState, type FormEvent } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";
import { useSession } from "../session";
import { ErrorLine } from "../components/Bits";
import { usePageTitle } from "../title";

export default function Login() {
  usePageTitle("Sign in");
  const { signIn, signOut, ended, user, anonymous } = useSession();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const next = params.get("next");
  const back = next && next.startsWith("/") && !next.startsWith("//") ? next : "/experiments";
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(username, password);
      navigate(back, { replace: true });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="login" onSubmit={submit}>
      <h1>Sign in</h1>
      {user && !anonymous && (
        <p data-testid="signed-in-as">
          Signed in as <strong>{user.username}</strong>{user.admin ? " (admin)" : ""}.{" "}
          <Link to={back}>Go back</Link>, <button type="button" className="link" onClick={() => void signOut()}>sign out</button>, or
          sign in as someone else:
        </p>
      )}
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
