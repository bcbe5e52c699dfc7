import { useEffect, useState } from "preact/hooks";

/** The console's screens, addressed by the URL hash (`#/sessions/ID`), so reloads and links work without server routes. */
export type Route =
  | { name: "sessions" }
  | { name: "session"; id: string }
  | { name: "new" }
  | { name: "teams"; taskId?: string }
  | { name: "environments" }
  | { name: "mcp" }
  | { name: "keys" }
  | { name: "usage" };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  switch (parts[0]) {
    case "sessions":
      return parts[1] ? { name: "session", id: parts[1] } : { name: "sessions" };
    case "new":
      return { name: "new" };
    case "teams":
      return parts[1] ? { name: "teams", taskId: parts[1] } : { name: "teams" };
    case "environments":
      return { name: "environments" };
    case "mcp":
      return { name: "mcp" };
    case "keys":
      return { name: "keys" };
    case "usage":
      return { name: "usage" };
    default:
      return { name: "sessions" };
  }
}

export const href = {
  sessions: "#/sessions",
  session: (id: string) => `#/sessions/${encodeURIComponent(id)}`,
  newSession: "#/new",
  teams: (taskId?: string) => (taskId ? `#/teams/${encodeURIComponent(taskId)}` : "#/teams"),
  environments: "#/environments",
  mcp: "#/mcp",
  keys: "#/keys",
  usage: "#/usage",
};

/** The current route; follows `hashchange`. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", update);
    update(); // the hash may have changed between the first render and this listener
    return () => removeEventListener("hashchange", update);
  }, []);
  return route;
}
