import type { FastifyBaseLogger } from "fastify";
import type { LiveTools } from "../agent/index.ts";
import { AddressGuard, McpConnections, McpHealth, McpOAuth, McpServers, parseSecretKey, SecretBox, SessionMcpTools } from "../mcp/index.ts";
import type { SessionExtension, SessionLink } from "../session/index.ts";
import type { Store } from "../store/index.ts";
import type { Config } from "./config.ts";
import type { Lifecycle } from "./lifecycle.ts";

/** The MCP servers of this node and the session extension that offers their tools. */
export interface Mcp {
  readonly servers: McpServers;
  extension(link: SessionLink): SessionExtension;
  /** A worker's MCP tools: those of its tenant and parent session (degradations reach the parent's own view). */
  workerTools(tenantId: string, sessionId: string | undefined): LiveTools;
}

/**
 * Builds the MCP registry from configuration: credentials sealed with `ROZ_SECRET_KEY`, the
 * address guard (`ROZ_MCP_ALLOW_PRIVATE`), this node's connections (closed at shutdown), and
 * OAuth, whose callback is under `publicUrl()` (`ROZ_PUBLIC_URL`, else where this node listens).
 */
export function createMcp(config: Config, store: Store, log: FastifyBaseLogger, lifecycle: Lifecycle, publicUrl: () => string): Mcp {
  const key = config.secretKey === undefined ? undefined : parseSecretKey(config.secretKey);
  const box = key && new SecretBox(key);
  const guard = new AddressGuard(config.mcpAllowPrivate === "1");
  const connections = new McpConnections(guard);
  const oauth = box && new McpOAuth({ store, box, fetch: connections.fetch, publicUrl });
  // The health's background probes go through the registry built right below.
  let registry: McpServers | undefined;
  const health = new McpHealth({ store, log, probe: (server) => registry!.probeAgain(server) });
  const servers = new McpServers({ store, box, oauth, guard, connections, health, callTimeoutMs: config.mcpCallTimeoutMs });
  registry = servers;
  lifecycle.onClose("mcp connections", async () => {
    health.close();
    await connections.close();
  });
  return {
    servers,
    workerTools: (tenantId, sessionId) => new SessionMcpTools(servers, { tenantId, sessionId: sessionId ?? "", degraded: () => undefined }),
    extension(link) {
      const tools = new SessionMcpTools(servers, {
        tenantId: link.tenantId,
        sessionId: link.id,
        degraded: (event) => link.emit({ type: "mcp_server_degraded", ...event }),
      });
      const unsubscribe = health.onDegraded((d) => tools.degraded(d));
      return {
        serverTools: [],
        liveTools: tools,
        ended: () => {
          unsubscribe();
          servers
            .sessionEnded(link.tenantId, link.id)
            .catch((err: unknown) => log.warn({ err, sessionId: link.id }, "could not delete the session's MCP servers"));
        },
      };
    },
  };
}

/** One extension made of several: their server tools together, each told of the end. */
export function combineExtensions(...extend: ((link: SessionLink) => SessionExtension)[]): (link: SessionLink) => SessionExtension {
  return (link) => {
    const parts = extend.map((e) => e(link));
    const live = parts.flatMap((p) => (p.liveTools ? [p.liveTools] : []));
    return {
      serverTools: parts.flatMap((p) => p.serverTools),
      ...(live.length > 0 ? { liveTools: { refresh: async (signal) => (await Promise.all(live.map((l) => l.refresh(signal)))).flat() } } : {}),
      ended: (status, reason) => {
        for (const p of parts) p.ended(status, reason);
      },
    };
  };
}
