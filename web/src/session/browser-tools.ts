import type { JsonObject } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ToolCategoryHint, type ToolSchemaSchema } from "../../../src/gen/roz/v1/agent_pb.js";

/** What a browser tool may ask of the page it runs in. */
export interface ToolHost {
  /** Shows `question` to the user and resolves with the answer. */
  ask(question: string, toolCallId: string): Promise<string>;
}

export interface ToolOutcome {
  success: boolean;
  result: string;
}

/** Paths of this origin that `fetch_url` may read: read-only, key-free, small. */
export const FETCH_ALLOW_LIST = ["/healthz", "/readyz", "/v1/version", "/openapi.json"];

interface BrowserTool {
  schema: MessageInitShape<typeof ToolSchemaSchema>;
  run(args: JsonObject, host: ToolHost, toolCallId: string): Promise<ToolOutcome>;
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");

/**
 * Tools the console offers in `StartSession.tools` and runs itself when the agent calls them:
 * client-executed tools end to end, with nothing installed.
 */
const tools: BrowserTool[] = [
  {
    schema: {
      name: "current_time",
      description: "The current date and time in the user's browser, with its time zone.",
      parametersSchema: { type: "object", properties: {} },
      category: ToolCategoryHint.TOOL_CATEGORY_PURE,
    },
    run: async () => ({
      success: true,
      result: JSON.stringify({ iso: new Date().toISOString(), time_zone: Intl.DateTimeFormat().resolvedOptions().timeZone }),
    }),
  },
  {
    schema: {
      name: "ask_user",
      description: "Ask the user a question in the console and wait for the answer.",
      parametersSchema: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
      timeoutMs: 600_000,
    },
    run: async (args, host, id) => ({ success: true, result: await host.ask(str(args["question"]) || "(no question)", id) }),
  },
  {
    schema: {
      name: "fetch_url",
      description: `GET a URL of this server from an allow-list (${FETCH_ALLOW_LIST.join(", ")}) and return the body.`,
      parametersSchema: { type: "object", properties: { url: { type: "string" } }, required: ["url"] },
    },
    run: async (args) => {
      let url: URL;
      try {
        url = new URL(str(args["url"]), location.origin);
      } catch {
        return { success: false, result: `not a URL: ${str(args["url"])}` };
      }
      if (url.origin !== location.origin || !FETCH_ALLOW_LIST.includes(url.pathname)) {
        return { success: false, result: `not on the allow-list: ${url.href} (allowed: ${FETCH_ALLOW_LIST.join(", ")} on this server)` };
      }
      const res = await fetch(url.pathname);
      return { success: res.ok, result: (await res.text()).slice(0, 20_000) };
    },
  },
];

export const browserToolSchemas = tools.map((t) => t.schema);

export const isBrowserTool = (name: string): boolean => tools.some((t) => t.schema.name === name);

/** Runs the browser tool `name`; an unknown name or a throw becomes a failed result. */
export async function runBrowserTool(name: string, args: JsonObject, host: ToolHost, toolCallId: string): Promise<ToolOutcome> {
  const tool = tools.find((t) => t.schema.name === name);
  if (!tool) return { success: false, result: `no browser tool named ${name}` };
  try {
    return await tool.run(args, host, toolCallId);
  } catch (err) {
    return { success: false, result: err instanceof Error ? err.message : String(err) };
  }
}
