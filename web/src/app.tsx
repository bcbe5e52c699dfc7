import { useEffect, useMemo, useState } from "preact/hooks";
import { credentials, onSignedOut } from "./api/credentials.ts";
import { rest, type KeyJson } from "./api/rest.ts";
import { agentClient } from "./api/rpc.ts";
import { href, useAddress, useRoute, type Route } from "./router.ts";
import { EnvironmentsView } from "./views/environments.tsx";
import { McpServersView } from "./views/mcp-servers.tsx";
import { KeysView } from "./views/keys.tsx";
import { NewSessionView } from "./views/new-session.tsx";
import { SessionView } from "./views/session.tsx";
import { SessionsView } from "./views/sessions.tsx";
import { SignIn } from "./views/sign-in.tsx";
import { TeamsView } from "./views/teams.tsx";
import { UsageView } from "./views/usage.tsx";

/** `open`: the server needs no key (loopback, none created yet); `key`: this tab's key works. */
type Access = { state: "checking" } | { state: "signed-out"; reason: string } | { state: "open" } | { state: "key" };

/** Finds out whether this tab can call the API: with its key, or with none at all (open mode). */
async function checkAccess(): Promise<Access> {
  const key = credentials.get();
  try {
    await rest("GET", "/v1/sessions?limit=1", undefined, key ? { key } : { probe: true });
    return key ? { state: "key" } : { state: "open" };
  } catch (err) {
    if (key) credentials.clear();
    return { state: "signed-out", reason: key ? `Your key no longer works (${(err as Error).message}).` : "" };
  }
}

const nav: { route: Route["name"]; label: string; to: string }[] = [
  { route: "sessions", label: "Sessions", to: href.sessions },
  { route: "new", label: "New session", to: href.newSession },
  { route: "teams", label: "Teams", to: href.teams() },
  { route: "environments", label: "Environments", to: href.environments },
  { route: "mcp", label: "MCP servers", to: href.mcp },
  { route: "keys", label: "Keys", to: href.keys },
  { route: "usage", label: "Usage", to: href.usage },
];

export function App() {
  const [access, setAccess] = useState<Access>({ state: "checking" });
  const route = useRoute();
  const address = useAddress();
  const client = useMemo(() => agentClient(), []);
  // A new key's secret outlives a sign-out: the first key made in open mode ends open mode at once.
  const [created, setCreated] = useState<KeyJson | undefined>();

  useEffect(() => {
    void checkAccess().then(setAccess);
    return onSignedOut((reason) =>
      setAccess((was) => ({
        state: "signed-out",
        reason: was.state === "open" ? "This server now needs an API key: one has been created." : `Signed out: ${reason}`,
      })),
    );
  }, []);

  if (access.state === "checking")
    return (
      <main class="center" aria-busy="true">
        Connecting…
      </main>
    );
  if (access.state === "signed-out")
    return <SignIn reason={access.reason} created={created} clearCreated={() => setCreated(undefined)} onSignedIn={() => setAccess({ state: "key" })} />;

  // The address, not the page: a session started on "New session" is a session from then on.
  const current = address.name === "session" ? "sessions" : address.name;
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href={href.sessions}>
          roz
        </a>
        <nav aria-label="Main">
          {nav.map((n) => (
            <a href={n.to} aria-current={current === n.route ? "page" : undefined}>
              {n.label}
            </a>
          ))}
        </nav>
        <span class="who">
          {access.state === "open" ? (
            <span class="badge warn" title="The server runs without keys on this loopback address until one is created">
              open mode
            </span>
          ) : (
            <button
              type="button"
              class="link"
              onClick={() => {
                credentials.clear();
                setAccess({ state: "signed-out", reason: "" });
              }}
            >
              Sign out
            </button>
          )}
        </span>
      </header>
      <main id="main">
        {route.name === "sessions" && <SessionsView />}
        {route.name === "session" && <SessionView key={route.id} id={route.id} client={client} />}
        {route.name === "new" && <NewSessionView client={client} />}
        {route.name === "teams" && <TeamsView key={route.taskId ?? ""} taskId={route.taskId} client={client} />}
        {route.name === "environments" && <EnvironmentsView />}
        {route.name === "mcp" && <McpServersView />}
        {route.name === "keys" && <KeysView created={created} setCreated={setCreated} />}
        {route.name === "usage" && <UsageView />}
      </main>
    </div>
  );
}
