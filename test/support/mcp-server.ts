/**
 * A real MCP server for the tests, built with the same SDK roz uses (`McpServer` +
 * `StreamableHTTPServerTransport`, one per client session, so server notifications reach the
 * client). Tools: `echo`, `structured`, `fail` (isError), `slow` (waits, notes cancellation).
 * It records the headers of each request and can be taken down (503) and back. With `oauth`
 * it is a protected resource (RFC 9728 metadata naming that authorization server) and answers
 * 401 to any request without an access token the authorization server issued and still honours.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import type { TestOAuthServer } from "./oauth-server.ts";

export interface TestMcpServer {
  /** The MCP endpoint (`/mcp`). */
  readonly url: string;
  /** The headers of every request, in order. */
  readonly headers: Record<string, string | string[] | undefined>[];
  /** Arguments of each tool call, in order. */
  readonly calls: { tool: string; args: unknown }[];
  /** Calls of `slow` whose request was cancelled by the client. */
  readonly cancelled: string[];
  /** Requests answered 401 (with `oauth`: no valid access token). */
  readonly unauthorized: number;
  /** Answer every request with 503 (down) or serve again. */
  setDown(down: boolean): void;
  /** Adds a tool on every client session (the SDK sends `notifications/tools/list_changed`). */
  addTool(name: string, answer: string): void;
  close(): Promise<void>;
}

type Extra = { signal: AbortSignal };

function buildServer(extra: Map<string, string>, record: (tool: string, args: unknown) => void, cancelled: string[]): McpServer {
  const mcp = new McpServer({ name: "test-mcp", version: "1.0.0" });
  mcp.registerTool("echo", { description: "Echoes text", inputSchema: { text: z.string() } }, async ({ text }) => {
    record("echo", { text });
    return { content: [{ type: "text", text: `echo: ${text}` }] };
  });
  mcp.registerTool("structured", { description: "Doubles n", inputSchema: { n: z.number() } }, async ({ n }) => {
    record("structured", { n });
    return { content: [{ type: "text", text: "doubled" }], structuredContent: { double: n * 2 } };
  });
  mcp.registerTool("fail", { description: "Always fails" }, async () => {
    record("fail", {});
    return { content: [{ type: "text", text: "it broke" }], isError: true };
  });
  mcp.registerTool("slow", { description: "Waits ms", inputSchema: { ms: z.number(), tag: z.string() } }, async ({ ms, tag }, { signal }: Extra) => {
    record("slow", { ms, tag });
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        cancelled.push(tag);
        resolve();
      });
    });
    return { content: [{ type: "text", text: `slept ${ms}` }] };
  });
  for (const [name, answer] of extra) addEcho(mcp, name, answer);
  return mcp;
}

function addEcho(mcp: McpServer, name: string, answer: string): void {
  mcp.registerTool(name, { description: `Answers ${answer}` }, async () => ({ content: [{ type: "text", text: answer }] }));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

export interface McpServerOptions {
  /** Require access tokens of this authorization server. */
  oauth?: TestOAuthServer;
}

export async function startMcpServer(options: McpServerOptions = {}): Promise<TestMcpServer> {
  const headers: TestMcpServer["headers"] = [];
  const calls: TestMcpServer["calls"] = [];
  const cancelled: string[] = [];
  const extra = new Map<string, string>();
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; mcp: McpServer }>();
  let down = false;
  let unauthorized = 0;
  let url = "";
  const record = (tool: string, args: unknown) => calls.push({ tool, args });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    headers.push({ ...req.headers });
    if (down) {
      res.writeHead(503).end("down");
      return;
    }
    const { oauth } = options;
    if (oauth !== undefined && req.url?.startsWith("/.well-known/oauth-protected-resource")) {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ resource: url, authorization_servers: [oauth.url] }));
      return;
    }
    if (oauth !== undefined && !oauth.valid(/^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "")) {
      unauthorized++;
      const metadata = `${new URL(url).origin}/.well-known/oauth-protected-resource/mcp`;
      res.writeHead(401, { "www-authenticate": `Bearer error="invalid_token", resource_metadata="${metadata}"` }).end();
      return;
    }
    const id = req.headers["mcp-session-id"];
    const body = req.method === "POST" ? await readJson(req) : undefined;
    let session = typeof id === "string" ? sessions.get(id) : undefined;
    if (session === undefined) {
      if (typeof id === "string" || req.method !== "POST") {
        res.writeHead(404).end();
        return;
      }
      const mcp = buildServer(extra, record, cancelled);
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => {
          sessions.set(sid, { transport, mcp });
        },
      });
      transport.onclose = () => {
        if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
      };
      await mcp.connect(transport);
      session = { transport, mcp };
    }
    await session.transport.handleRequest(req, res, body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  url = `http://127.0.0.1:${port}/mcp`;
  return {
    url,
    headers,
    calls,
    cancelled,
    get unauthorized() {
      return unauthorized;
    },
    setDown: (value) => {
      down = value;
    },
    addTool(name, answer) {
      extra.set(name, answer);
      for (const { mcp } of sessions.values()) addEcho(mcp, name, answer);
    },
    async close() {
      for (const { transport } of sessions.values()) await transport.close().catch(() => undefined);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
