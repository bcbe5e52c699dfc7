import type { AddressGuard } from "./address-guard.ts";

/** Redirects one request may follow; each target is checked like the first URL. */
const MAX_REDIRECTS = 5;

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * A `fetch` for the MCP transport that checks every URL it is about to reach, the targets of
 * redirects included (followed here by hand, at most `MAX_REDIRECTS`), so that neither a DNS
 * change nor a redirect leads a call to a private address.
 */
export function guardedFetch(guard: AddressGuard, inner: Fetch = fetch): Fetch {
  return async (url, init) => {
    let target = new URL(String(url));
    let request: RequestInit = { ...init, redirect: "manual" };
    for (let hop = 0; ; hop++) {
      await guard.check(target.href);
      const response = await inner(target, request);
      const location = response.headers.get("location");
      if (response.status < 300 || response.status >= 400 || location === null) return response;
      if (hop >= MAX_REDIRECTS) throw new Error(`too many redirects from ${String(url)}`);
      await response.body?.cancel();
      target = new URL(location, target);
      // 303 (and 301/302 after a POST, as browsers do) turn into a GET without a body.
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && request.method === "POST")) {
        request = { ...request, method: "GET", body: null };
      }
    }
  };
}
