import type { AddressGuard } from "./address-guard.ts";
import type { Fetch } from "./pinned-fetch.ts";

/** Redirects one request may follow; each target is checked like the first URL. */
const MAX_REDIRECTS = 5;

/**
 * A `fetch` for MCP traffic that checks every URL it is about to reach, the targets of
 * redirects included. `inner` must resolve host names through the same guard (pinned-fetch.ts):
 * here address literals and schemes are checked, there every address a name resolves to.
 * Redirects are followed by hand within the origin only (at most `MAX_REDIRECTS`), so that no
 * credential header travels to another host; a redirect to another origin is returned unfollowed,
 * as the MCP SDK's own fetch does (one to a private address literal is refused by name).
 */
export function guardedFetch(guard: AddressGuard, inner: Fetch): Fetch {
  return async (url, init) => {
    let target = guard.checkTarget(String(url));
    let request: RequestInit = { ...init, redirect: "manual" };
    for (let hop = 0; ; hop++) {
      const response = await inner(target, request);
      const location = response.headers.get("location");
      if (response.status < 300 || response.status >= 400 || location === null || !URL.canParse(location, target)) return response;
      const next = new URL(location, target);
      if (next.origin !== target.origin) {
        try {
          guard.checkTarget(next);
        } catch (err) {
          await response.body?.cancel();
          throw err;
        }
        return response;
      }
      if (hop >= MAX_REDIRECTS) throw new Error(`too many redirects from ${String(url)}`);
      await response.body?.cancel();
      target = guard.checkTarget(next);
      // 303 (and 301/302 after a POST, as browsers do) turn into a GET without a body.
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && request.method === "POST")) {
        request = { ...request, method: "GET", body: null };
      }
    }
  };
}
