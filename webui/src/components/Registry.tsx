/** Shared by the model registry pages: their paths, and what a visitor who did not sign in sees. */
import { Link } from "react-router";
import { getToken } from "../api";
import { useSession } from "../session";

/** The page of model ``name`` (also its API path under ``/api/v1``). */
export const modelPath = (name: string) => `/models/${encodeURIComponent(name)}`;

/** Whether the visitor signed in (not the master's anonymous access): only then may they edit. */
export function useSignedIn(): boolean {
  const { user, anonymous } = useSession();
  return !!user && !anonymous && !!getToken();
}

/** For a visitor browsing without signing in: what they can do, and a sign-in link. */
export function SignedOutHint({ next }: { next: string }) {
  const { user } = useSession();
  if (useSignedIn()) return null;
  return (
    <p className="hint" data-testid="signed-out-hint">
      Not signed in{user ? <> (browsing as {user.username})</> : null}: you can see every model and its
      versions. <Link to={`/login?next=${encodeURIComponent(next)}`}>Sign in</Link> to edit a model's
      description and metadata.
    </p>
  );
}
