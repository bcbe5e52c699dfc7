import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type CallToolResult, ErrorCode, McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { JsonObject } from "../models/index.ts";

/** A tool as an MCP server lists it. */
export interface McpToolInfo {
  name: string;
  description: string;
  inputSchema: JsonObject;
}

/** Where and how to reach one server. */
export interface McpEndpoint {
  url: string;
  headers: Record<string, string>;
  /** OAuth servers: adds the access token to each request and refreshes it (oauth-client.ts). */
  authProvider?: OAuthClientProvider;
  fetch: (url: string | URL, init?: RequestInit) => Promise<Response>;
}

const CLIENT_INFO = { name: "roz", version: "1" };

/**
 * Whether `err` means the server could not be reached or did not answer in time (what
 * degrades it), as opposed to an answer such as a JSON-RPC error about the call.
 */
export function isConnectionFailure(err: unknown): boolean {
  if (!(err instanceof McpError)) return true;
  return err.code === ErrorCode.RequestTimeout || err.code === ErrorCode.ConnectionClosed;
}

/**
 * One MCP client session with one server (the SDK's `Client` over Streamable HTTP), opened on
 * first use. The tool list is kept until the server says `notifications/tools/list_changed`.
 * A broken transport closes the session: the next use opens a new one.
 */
export class McpConnection {
  readonly #endpoint: McpEndpoint;
  #client: Promise<Client> | undefined;
  #tools: Promise<McpToolInfo[]> | undefined;
  /** Bumped by each list change, so a listing that started before it is not kept. */
  #listVersion = 0;
  #lastUsed = Date.now();

  constructor(endpoint: McpEndpoint) {
    this.#endpoint = endpoint;
  }

  get lastUsed(): number {
    return this.#lastUsed;
  }

  /** The server's tools: cached, or listed now (within `timeoutMs`). */
  tools(timeoutMs: number, signal?: AbortSignal): Promise<McpToolInfo[]> {
    this.#lastUsed = Date.now();
    if (this.#tools === undefined) {
      const version = this.#listVersion;
      const listing = this.#listTools(timeoutMs, signal);
      this.#tools = listing;
      listing.catch(() => {
        if (this.#tools === listing) this.#tools = undefined;
      });
      void listing.then(
        () => {
          if (version !== this.#listVersion && this.#tools === listing) this.#tools = undefined;
        },
        () => undefined,
      );
    }
    return this.#tools;
  }

  /** Calls a tool; the SDK sends `notifications/cancelled` when `signal` aborts or the time is up. */
  async call(name: string, args: JsonObject, timeoutMs: number, signal: AbortSignal): Promise<CallToolResult> {
    this.#lastUsed = Date.now();
    return this.#use(
      timeoutMs,
      signal,
      (client) => client.callTool({ name, arguments: args }, undefined, { signal, timeout: timeoutMs }) as Promise<CallToolResult>,
    );
  }

  /** Ends the client session (a DELETE to the server when it gave one). */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    this.#tools = undefined;
    await client?.then((c) => c.close()).catch(() => undefined);
  }

  async #listTools(timeoutMs: number, signal?: AbortSignal): Promise<McpToolInfo[]> {
    const tools: McpToolInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#use(timeoutMs, signal, (client) =>
        client.listTools(cursor === undefined ? {} : { cursor }, { timeout: timeoutMs, ...(signal ? { signal } : {}) }),
      );
      for (const t of page.tools) tools.push({ name: t.name, description: t.description ?? "", inputSchema: t.inputSchema as JsonObject });
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools;
  }

  async #use<T>(timeoutMs: number, signal: AbortSignal | undefined, fn: (client: Client) => Promise<T>): Promise<T> {
    const client = await this.#open(timeoutMs);
    try {
      return await fn(client);
    } catch (err) {
      // Only a broken transport ends the session: a timeout or a cancel leaves it open, so
      // that the `notifications/cancelled` the SDK sends for the call still gets through.
      if (signal?.aborted !== true && !(err instanceof McpError)) await this.close();
      throw err;
    }
  }

  #open(timeoutMs: number): Promise<Client> {
    if (this.#client === undefined) {
      const opening = this.#connect(timeoutMs);
      this.#client = opening;
      opening.catch(() => {
        if (this.#client === opening) this.#client = undefined;
      });
    }
    return this.#client;
  }

  async #connect(timeoutMs: number): Promise<Client> {
    const { url, headers, fetch, authProvider } = this.#endpoint;
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      this.#listVersion++;
      this.#tools = undefined;
    });
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, fetch, ...(authProvider ? { authProvider } : {}) });
    try {
      await client.connect(transport, { timeout: timeoutMs });
    } catch (err) {
      await client.close().catch(() => undefined);
      throw err;
    }
    return client;
  }
}
