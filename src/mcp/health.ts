import type { McpHealthChange, McpServerRecord, Store } from "../store/index.ts";
import type { McpDegradation } from "./types.ts";

/** Consecutive connection failures or timeouts that mark a server degraded. */
export const DEGRADE_AFTER = 3;
const RETRY_FIRST_MS = 5_000;
const RETRY_MAX_MS = 300_000;

export interface HealthDeps {
  store: Pick<Store, "setMcpServerHealth">;
  /** Probes a degraded server again (a background health check). */
  probe(server: McpServerRecord): Promise<void>;
  log: { warn(obj: object, msg: string): void };
  retryFirstMs?: number;
}

/**
 * Counts consecutive connection failures per server on this node and writes each change to
 * the store (so every node sees it). The `DEGRADE_AFTER`th marks the server degraded, tells
 * the listeners and starts background probes with doubling waits until one succeeds. A
 * success clears the count; an `isError` answer is an answer and never reaches here.
 */
export class McpHealth {
  readonly #deps: HealthDeps;
  readonly #listeners = new Set<(d: McpDegradation) => void>();
  readonly #retries = new Map<string, NodeJS.Timeout>();

  constructor(deps: HealthDeps) {
    this.#deps = deps;
  }

  /** Calls `listener` for each server degraded on this node; returns the unsubscribe. */
  onDegraded(listener: (d: McpDegradation) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Records a success; returns the server as it is now. */
  async succeeded(server: McpServerRecord): Promise<McpServerRecord> {
    this.#stopRetry(server.id);
    if (server.failureCount === 0 && server.health === "healthy") return server;
    return this.#write(server, { health: "healthy", failureCount: 0, degradedAt: null, lastError: null });
  }

  /** Records a connection failure or timeout; returns the server as it is now. */
  async failed(server: McpServerRecord, error: string): Promise<McpServerRecord> {
    const failureCount = server.failureCount + 1;
    const degrades = server.health === "healthy" && failureCount >= DEGRADE_AFTER;
    const health = server.health === "degraded" || degrades ? "degraded" : "healthy";
    const degradedAt = degrades ? Date.now() : (server.degradedAt ?? null);
    const now = await this.#write(server, { health, failureCount, degradedAt, lastError: error });
    if (degrades) {
      this.#deps.log.warn({ mcpServer: server.name, tenantId: server.tenantId, failureCount, lastError: error }, "MCP server degraded");
      const degradation = { tenantId: server.tenantId, serverId: server.id, serverName: server.name, failureCount, lastError: error };
      for (const listener of this.#listeners) listener(degradation);
    }
    if (health === "degraded") this.#scheduleRetry(now, degrades);
    return now;
  }

  /** Stops every background probe (shutdown). */
  close(): void {
    for (const timer of this.#retries.values()) clearTimeout(timer);
    this.#retries.clear();
  }

  async #write(server: McpServerRecord, change: McpHealthChange): Promise<McpServerRecord> {
    await this.#deps.store.setMcpServerHealth(server.id, change);
    return {
      ...server,
      health: change.health,
      failureCount: change.failureCount,
      degradedAt: change.degradedAt ?? undefined,
      lastError: change.lastError ?? undefined,
    };
  }

  #scheduleRetry(server: McpServerRecord, first: boolean): void {
    if (!first && this.#retries.has(server.id)) return;
    const base = this.#deps.retryFirstMs ?? RETRY_FIRST_MS;
    const waitMs = Math.min(RETRY_MAX_MS, base * 2 ** Math.max(0, server.failureCount - DEGRADE_AFTER));
    this.#stopRetry(server.id);
    const timer = setTimeout(() => {
      this.#retries.delete(server.id);
      this.#deps.probe(server).catch(() => undefined);
    }, waitMs);
    timer.unref();
    this.#retries.set(server.id, timer);
  }

  #stopRetry(id: string): void {
    const timer = this.#retries.get(id);
    if (timer !== undefined) clearTimeout(timer);
    this.#retries.delete(id);
  }
}
