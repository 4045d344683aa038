/** Layout and routes. Deep links work on reload: the master answers every non-API GET with the app. */
import { Link, Navigate, NavLink, Route, Routes, useLocation } from "react-router";
import { SessionProvider, useSession } from "./session";
import Login from "./pages/Login";
import ExperimentList from "./pages/ExperimentList";
import ExperimentPage from "./pages/ExperimentPage";
import TrialPage from "./pages/TrialPage";
import ClusterPage from "./pages/ClusterPage";
import TaskList from "./pages/TaskList";
import MasterLogs from "./pages/MasterLogs";
import ModelList from "./pages/ModelList";
import ModelPage from "./pages/ModelPage";
import ChartBench from "./pages/ChartBench";
import ConnectionStatus from "./components/ConnectionStatus";

/** Top-level pages in the navigation bar; another page adds its entry here and a route below. */
export const NAV = [
  { to: "/experiments", label: "Experiments" },
  { to: "/models", label: "Models" },
  { to: "/tasks", label: "Tasks" },
  { to: "/cluster", label: "Cluster" },
  { to: "/logs", label: "Master logs" },
];

function Shell() {
  const { user, anonymous, checked, signOut } = useSession();
  const location = useLocation();
  if (!checked) return <p className="muted page">Loading…</p>;
  const onLogin = location.pathname === "/login";
  if (!user && !onLogin) {
    return <Navigate to={`/login?next=${encodeURIComponent(location.pathname + location.search)}`} replace />;
  }
  return (
    <>
      <header className="topbar">
        <Link to="/" className="brand">determined</Link>
        <nav>
          {NAV.map((n) => (
            <NavLink key={n.to} to={n.to}>{n.label}</NavLink>
          ))}
          <a href="/docs" target="_blank" rel="noreferrer">API</a>
        </nav>
        <ConnectionStatus />
        <span className="who" data-testid="who">
          {user ? (
            <>
              {user.username}
              {user.admin ? " (admin)" : ""}
              {anonymous ? (
                <> · <Link to="/login">sign in</Link></>
              ) : (
                <> · <button className="link" onClick={() => void signOut()}>sign out</button></>
              )}
            </>
          ) : null}
        </span>
      </header>
      <main className="page">
        <Routes>
          <Route path="/" element={<Navigate to="/experiments" replace />} />
          <Route path="/login" element={<Login />} />
          <Route path="/experiments" element={<ExperimentList />} />
          <Route path="/experiments/:id" element={<ExperimentPage />} />
          <Route path="/experiments/:id/trials/:trialId" element={<TrialPage />} />
          <Route path="/trials/:trialId" element={<TrialPage />} />
          <Route path="/models" element={<ModelList />} />
          <Route path="/models/:name" element={<ModelPage />} />
          <Route path="/tasks" element={<TaskList />} />
          <Route path="/cluster" element={<ClusterPage />} />
          <Route path="/logs" element={<MasterLogs />} />
          <Route path="/bench/chart" element={<ChartBench />} />
          <Route path="*" element={<p>No such page: {location.pathname}. <Link to="/">Experiments</Link></p>} />
        </Routes>
      </main>
    </>
  );
}

export default function App() {
  return (
    <SessionProvider>
      <Shell />
    </SessionProvider>
  );
}
