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

/** Sent when `replaceAddress` changes the address without a `hashchange`. */
const REPLACED = "roz:address-replaced";

/**
 * Names the page's current content without leaving it (no `hashchange`, no new history
 * entry): a session started on the New session page becomes `#/sessions/ID`, so a reload or
 * a copied link opens it, while the page that started it stays (its stream and tools).
 */
export function replaceAddress(to: string): void {
  history.replaceState(null, "", to);
  dispatchEvent(new Event(REPLACED));
}

/** The route of the address bar, also after `replaceAddress` (for the navigation's current item). */
export function useAddress(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", update);
    addEventListener(REPLACED, update);
    return () => {
      removeEventListener("hashchange", update);
      removeEventListener(REPLACED, update);
    };
  }, []);
  return route;
}

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
