import type { JsonObject, Tools } from "@roz/client";

/** What a browser tool may ask of the page it runs in. */
export interface ToolHost {
  /** Shows `question` to the user and resolves with the answer. */
  ask(question: string, toolCallId: string): Promise<string>;
}

/** Paths of this origin that `fetch_url` may read: read-only, key-free, small. */
export const FETCH_ALLOW_LIST = ["/healthz", "/readyz", "/v1/version", "/openapi.json"];

const str = (v: unknown): string => (typeof v === "string" ? v : "");

/**
 * Tools the console offers in `StartSession.tools` and runs itself when the agent calls them
 * (through @roz/client, once per call): client-executed tools end to end, with nothing installed.
 * A throw is a failed result.
 */
export function browserTools(host: ToolHost): Tools {
  return {
    current_time: {
      description: "The current date and time in the user's browser, with its time zone.",
      category: "pure",
      run: () => ({ iso: new Date().toISOString(), time_zone: Intl.DateTimeFormat().resolvedOptions().timeZone }),
    },
    ask_user: {
      description: "Ask the user a question in the console and wait for the answer.",
      parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
      timeoutMs: 600_000,
      run: (args: JsonObject, call) => host.ask(str(args["question"]) || "(no question)", call.toolCallId),
    },
    fetch_url: {
      description: `GET a URL of this server from an allow-list (${FETCH_ALLOW_LIST.join(", ")}) and return the body.`,
      parameters: { type: "object", properties: { url: { type: "string" } }, required: ["url"] },
      run: async (args: JsonObject) => {
        let url: URL;
        try {
          url = new URL(str(args["url"]), location.origin);
        } catch {
          throw new Error(`not a URL: ${str(args["url"])}`);
        }
        if (url.origin !== location.origin || !FETCH_ALLOW_LIST.includes(url.pathname)) {
          throw new Error(`not on the allow-list: ${url.href} (allowed: ${FETCH_ALLOW_LIST.join(", ")} on this server)`);
        }
        const res = await fetch(url.pathname);
        const body = (await res.text()).slice(0, 20_000);
        if (!res.ok) throw new Error(body);
        return body;
      },
    },
  };
}
