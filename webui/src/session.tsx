/** The signed-in user: who the API says we are (GET /me), with or without a token. */
import { createContext, useCallback, useContext, useEffect, useState, type ReactNode } from "react";
import { api, ApiError, getToken, post, setToken, unauthorizedListeners, type User } from "./api";

interface Session {
  user: User | null;
  /** True when no token is held and the master let us in as its anonymous user. */
  anonymous: boolean;
  checked: boolean;
  /** True when the master refused the token held (it expired or was signed out): the
   * sign-in page says so rather than just appearing. */
  ended: boolean;
  signIn: (username: string, password: string) => Promise<void>;
  signOut: () => Promise<void>;
}

const SessionContext = createContext<Session>({
  user: null,
  anonymous: false,
  checked: false,
  ended: false,
  signIn: async () => {},
  signOut: async () => {},
});

export const useSession = () => useContext(SessionContext);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [user, setUser] = useState<User | null>(null);
  const [checked, setChecked] = useState(false);
  const [anonymous, setAnonymous] = useState(false);
  const [ended, setEnded] = useState(false);

  const refresh = useCallback(async () => {
    try {
      const me = await api<User>("/me");
      setUser(me);
      setAnonymous(!getToken());
    } catch (e) {
      if (e instanceof ApiError && e.status === 401 && getToken()) {
        setToken(null); // expired session: try again as anonymous
        setEnded(true);
        return refresh();
      }
      setUser(null);
    } finally {
      setChecked(true);
    }
  }, []);

  useEffect(() => {
    void refresh();
    const on401 = () => {
      setUser(null);
      if (getToken()) {
        setToken(null);
        setEnded(true);
        void refresh();
      }
    };
    unauthorizedListeners.add(on401);
    return () => {
      unauthorizedListeners.delete(on401);
    };
  }, [refresh]);

  const signIn = async (username: string, password: string) => {
    const out = await api<{ token: string; user: User }>("/auth/login", { method: "POST", json: { username, password } });
    setToken(out.token);
    setUser(out.user);
    setAnonymous(false);
    setEnded(false);
  };
  const signOut = async () => {
    try {
      if (getToken()) await post("/auth/logout");
    } finally {
      setToken(null);
      setUser(null);
      setEnded(false);
      await refresh();
    }
  };
  return (
    <SessionContext.Provider value={{ user, anonymous, checked, ended, signIn, signOut }}>{children}</SessionContext.Provider>
  );
}
