import type { LiveTools, ServerTool } from "../agent/index.ts";
import type { McpServerRecord } from "../store/index.ts";
import type { McpServers } from "./mcp-servers.ts";
import type { McpDegradation } from "./types.ts";

/** Tool names every provider accepts. */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,128}$/;

/** The prefix of a server's tools: `mcp__{server}__` (upstream's naming). */
export const toolPrefix = (server: string): string => `mcp__${server}__`;

export interface SessionMcpLink {
  tenantId: string;
  sessionId: string;
  /** Tells the session (`McpServerDegraded`). */
  degraded(event: { serverName: string; failureCount: number; lastError: string }): void;
}

/**
 * One session's MCP tools: before each model call, the tools of the enabled, healthy servers
 * it can see. A server whose tools it was offered and that is then degraded — on this node
 * (at once) or on another (seen at the next refresh) — is reported to the session once.
 */
export class SessionMcpTools implements LiveTools {
  readonly #servers: McpServers;
  readonly #link: SessionMcpLink;
  /** Servers whose tools this session was offered, by id, with their names. */
  readonly #seen = new Map<string, string>();

  constructor(servers: McpServers, link: SessionMcpLink) {
    this.#servers = servers;
    this.#link = link;
  }

  /** Called for every server degraded on this node. */
  degraded(d: McpDegradation): void {
    if (d.tenantId === this.#link.tenantId) this.#report(d.serverId, d);
  }

  async refresh(signal: AbortSignal): Promise<ServerTool[]> {
    let servers: McpServerRecord[];
    try {
      servers = await this.#servers.usable(this.#link.tenantId, this.#link.sessionId);
    } catch {
      return [];
    }
    const lists = await Promise.all(servers.map((s) => this.#toolsOf(s, signal)));
    return lists.flat();
  }

  async #toolsOf(server: McpServerRecord, signal: AbortSignal): Promise<ServerTool[]> {
    if (server.health === "degraded") {
      this.#report(server.id, { serverName: server.name, failureCount: server.failureCount, lastError: server.lastError ?? "" });
      return [];
    }
    let infos: Awaited<ReturnType<McpServers["tools"]>>;
    try {
      infos = await this.#servers.tools(server, signal);
    } catch {
      return [];
    }
    this.#seen.set(server.id, server.name);
    const prefix = toolPrefix(server.name);
    return infos
      .filter((t) => TOOL_NAME.test(prefix + t.name))
      .map((t) => ({
        name: prefix + t.name,
        description: t.description,
        parametersSchema: t.inputSchema,
        needsRule: true,
        run: (parameters, callSignal) => this.#servers.call(server, t.name, parameters, callSignal),
      }));
  }

  #report(serverId: string, event: { serverName: string; failureCount: number; lastError: string }): void {
    if (!this.#seen.delete(serverId)) return;
    this.#link.degraded({ serverName: event.serverName, failureCount: event.failureCount, lastError: event.lastError });
  }
}
