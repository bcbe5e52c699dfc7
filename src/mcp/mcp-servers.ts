import type { ToolOutcome } from "../agent/index.ts";
import { RozError } from "../errors/index.ts";
import type { JsonObject } from "../models/index.ts";
import type { McpServerRecord, Store } from "../store/index.ts";
import type { AddressGuard } from "./address-guard.ts";
import { type McpConnection, type McpToolInfo, isConnectionFailure } from "./connection.ts";
import type { McpConnections } from "./connections.ts";
import { checkAuth, headersOf, ownerOf, secretOf, settingsOf } from "./credentials.ts";
import type { McpHealth } from "./health.ts";
import type { McpOAuth, OAuthCallback } from "./oauth-approvals.ts";
import type { SecretBox } from "./secret-box.ts";
import { outcomeOf } from "./tool-result.ts";
import type { McpRegistered, McpRegistration, McpServerView } from "./types.ts";

/** Server names: they become part of tool names (`mcp__{server}__{tool}`), so no `__`. */
const SERVER_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,63}$/;

export interface McpServersDeps {
  store: Pick<Store, "putMcpServer" | "listMcpServers" | "getMcpServer" | "deleteMcpServer" | "setMcpServerHealth" | "getSession" | "deleteSessionMcpServers">;
  /** Absent without ROZ_SECRET_KEY: then no credentials can be registered. */
  box: SecretBox | undefined;
  /** OAuth authorizations (absent without ROZ_SECRET_KEY, as tokens must be sealed). */
  oauth: McpOAuth | undefined;
  guard: AddressGuard;
  connections: McpConnections;
  health: McpHealth;
  callTimeoutMs: number;
}

/** An OAuth server whose user has not approved yet: no tokens, so nothing to offer. */
const awaitsOAuth = (r: McpServerRecord): boolean => r.authKind === "oauth" && r.sealedCredentials === undefined;

const OAUTH_PENDING = "waiting for OAuth authorization: open the authorization_url that Register answered";

export const viewOf = (r: McpServerRecord): McpServerView => ({
  name: r.name,
  url: r.url,
  enabled: r.enabled,
  authKind: r.authKind,
  health: awaitsOAuth(r) ? "oauth_pending" : r.health,
  failureCount: r.failureCount,
  ...(r.degradedAt !== undefined ? { degradedAt: r.degradedAt } : {}),
  ...(awaitsOAuth(r) ? { lastError: OAUTH_PENDING } : r.lastError !== undefined ? { lastError: r.lastError } : {}),
  hasCredentials: r.sealedCredentials !== undefined,
  ...(r.sessionId !== undefined ? { sessionId: r.sessionId } : {}),
});

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err)).slice(0, 500);

/**
 * The MCP servers of every tenant (session-behaviour.md §12): registration with validation,
 * sealed credentials and the address guard, health, and the calls sessions make through this
 * node's connections. Tenant scoping as in the store: another tenant's server is unknown.
 */
export class McpServers {
  readonly #deps: McpServersDeps;

  constructor(deps: McpServersDeps) {
    this.#deps = deps;
  }

  /**
   * Registers (or replaces) a server. An OAuth server is registered waiting for its user: the
   * answer carries the authorization URL, and the callback (`authorize`) completes it.
   */
  async register(tenantId: string, input: McpRegistration): Promise<McpRegistered> {
    if (!SERVER_NAME.test(input.name)) {
      throw new RozError("invalid_argument", "name must be 1-64 letters, digits, - or _ (no __), starting with a letter or digit");
    }
    checkAuth(input.auth);
    const secret = secretOf(input.auth);
    if ((secret !== undefined || input.auth.kind === "oauth") && this.#deps.box === undefined) throw new RozError("secret_key_missing");
    await this.#deps.guard.check(input.url);
    if (input.sessionId !== undefined && (await this.#deps.store.getSession(tenantId, input.sessionId)) === undefined) {
      throw new RozError("not_found", `no session ${input.sessionId}`);
    }
    const { auth } = input;
    const begun = auth.kind === "oauth" ? await this.#deps.oauth!.begin(input.url, settingsOf(auth)) : undefined;
    const old = await this.#deps.store.getMcpServer(tenantId, input.name);
    const record = await this.#deps.store.putMcpServer(tenantId, {
      name: input.name,
      url: input.url,
      enabled: input.enabled,
      authKind: input.auth.kind,
      ...(input.sessionId !== undefined ? { sessionId: input.sessionId } : {}),
      ...(secret !== undefined ? { sealedCredentials: this.#deps.box!.seal(secret, ownerOf(tenantId, input.name)) } : {}),
    });
    if (old !== undefined) await this.#deps.connections.drop(old.id);
    if (begun === undefined) return { server: viewOf(record) };
    return { server: viewOf(record), oauthPending: await this.#deps.oauth!.pend(record, begun) };
  }

  /** The OAuth callback: stores the tokens of the server whose authorization `callback.state` names. */
  async authorize(callback: OAuthCallback): Promise<McpServerView> {
    if (this.#deps.oauth === undefined) throw new RozError("secret_key_missing");
    const server = await this.#deps.oauth.complete(callback);
    await this.#deps.connections.drop(server.id);
    return viewOf(server);
  }

  async list(tenantId: string): Promise<McpServerView[]> {
    return (await this.#deps.store.listMcpServers(tenantId)).map(viewOf);
  }

  async get(tenantId: string, name: string): Promise<McpServerView> {
    return viewOf(await this.#record(tenantId, name));
  }

  async delete(tenantId: string, name: string): Promise<boolean> {
    const old = await this.#deps.store.getMcpServer(tenantId, name);
    if (old === undefined || !(await this.#deps.store.deleteMcpServer(tenantId, name))) return false;
    await this.#deps.connections.drop(old.id);
    return true;
  }

  /** The session ended: the servers registered for it alone go, with their connections. */
  async sessionEnded(tenantId: string, sessionId: string): Promise<void> {
    const ids = await this.#deps.store.deleteSessionMcpServers(tenantId, sessionId);
    await Promise.all(ids.map((id) => this.#deps.connections.drop(id)));
  }

  /** Lists the server's tools afresh; success makes it healthy, a failure counts (§12). */
  async healthCheck(tenantId: string, name: string): Promise<McpServerView> {
    const record = await this.#record(tenantId, name);
    // Nothing to check before the user authorized it.
    return viewOf(awaitsOAuth(record) ? record : await this.#probe(record));
  }

  /** The servers a session may use: enabled, of its tenant or its own, authorized. */
  async usable(tenantId: string, sessionId: string): Promise<McpServerRecord[]> {
    return (await this.#deps.store.listMcpServers(tenantId, sessionId)).filter((s) => s.enabled && !awaitsOAuth(s));
  }

  /** The tools of a healthy server (cached per connection); a connection failure counts and rethrows. */
  async tools(server: McpServerRecord, signal?: AbortSignal): Promise<McpToolInfo[]> {
    return this.#tracked(server, signal, (c) => c.tools(this.#deps.callTimeoutMs, signal));
  }

  /** Calls a tool within `ROZ_MCP_CALL_TIMEOUT_MS`; `signal` cancels the call at the server. */
  async call(server: McpServerRecord, tool: string, args: JsonObject, signal: AbortSignal): Promise<ToolOutcome> {
    const startedAt = Date.now();
    const failed = (message: string): ToolOutcome => ({ success: false, result: message, truncated: false, durationMs: Date.now() - startedAt });
    try {
      const result = await this.#tracked(server, signal, (c) => c.call(tool, args, this.#deps.callTimeoutMs, signal));
      return outcomeOf(result, Date.now() - startedAt);
    } catch (err) {
      if (signal.aborted) return failed("cancelled");
      return failed(`MCP server ${server.name}: ${messageOf(err)}`);
    }
  }

  /** A background probe of a degraded server: skipped when it was deleted or registered anew. */
  async probeAgain(server: McpServerRecord): Promise<void> {
    const now = await this.#deps.store.getMcpServer(server.tenantId, server.name);
    if (now !== undefined && now.id === server.id) await this.#probe(now);
  }

  async #probe(server: McpServerRecord): Promise<McpServerRecord> {
    try {
      const connection = await this.#connectionOf(server);
      // A fresh session and a fresh listing: the check is that the server answers now.
      await connection.close();
      await connection.tools(this.#deps.callTimeoutMs);
      return await this.#deps.health.succeeded(server);
    } catch (err) {
      if (!isConnectionFailure(err)) return this.#deps.health.succeeded(server);
      return this.#deps.health.failed(server, messageOf(err));
    }
  }

  async #tracked<T>(server: McpServerRecord, signal: AbortSignal | undefined, use: (c: McpConnection) => Promise<T>): Promise<T> {
    let value: T;
    try {
      value = await use(await this.#connectionOf(server));
    } catch (err) {
      // A call cancelled with its turn says nothing about the server.
      if (signal?.aborted !== true && isConnectionFailure(err)) await this.#deps.health.failed(server, messageOf(err));
      throw err;
    }
    if (server.failureCount > 0) await this.#deps.health.succeeded(server);
    return value;
  }

  async #connectionOf(server: McpServerRecord): Promise<McpConnection> {
    return this.#deps.connections.get(server.id, () => {
      if (server.authKind !== "oauth") {
        return { url: server.url, headers: headersOf(server.authKind, server.sealedCredentials, ownerOf(server.tenantId, server.name), this.#deps.box) };
      }
      if (this.#deps.oauth === undefined) throw new RozError("secret_key_missing");
      return { url: server.url, headers: {}, authProvider: this.#deps.oauth.clientFor(server) };
    });
  }

  async #record(tenantId: string, name: string): Promise<McpServerRecord> {
    const record = await this.#deps.store.getMcpServer(tenantId, name);
    if (record === undefined) throw new RozError("not_found", `no MCP server named "${name}"`);
    return record;
  }
}
