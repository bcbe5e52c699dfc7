import type { AddressGuard } from "./address-guard.ts";
import { McpConnection, type McpEndpoint } from "./connection.ts";
import { guardedFetch } from "./guarded-fetch.ts";
import { type Fetch, type PinnedFetch, pinnedFetch } from "./pinned-fetch.ts";

/** A connection unused this long is closed. */
const IDLE_MS = 300_000;

/**
 * This node's connections to MCP servers, one per registered server (a registration's id is
 * per tenant), opened on first use and closed when idle, on delete or re-registration, and at
 * shutdown. Every request goes through the address guard, over one pool of pinned sockets.
 */
export class McpConnections {
  readonly #pinned: PinnedFetch;
  /** The guarded fetch every MCP and OAuth request of this node uses. */
  readonly fetch: Fetch;
  readonly #open = new Map<string, McpConnection>();
  readonly #sweeper: NodeJS.Timeout;
  readonly #idleMs: number;

  constructor(guard: AddressGuard, idleMs = IDLE_MS) {
    this.#pinned = pinnedFetch(guard);
    this.fetch = guardedFetch(guard, this.#pinned.fetch);
    this.#idleMs = idleMs;
    this.#sweeper = setInterval(() => this.#closeIdle(), Math.max(1_000, idleMs / 4));
    this.#sweeper.unref();
  }

  /** The connection to a server, opened with `endpoint()` when there is none. */
  get(serverId: string, endpoint: () => Omit<McpEndpoint, "fetch">): McpConnection {
    let connection = this.#open.get(serverId);
    if (connection === undefined) {
      connection = new McpConnection({ ...endpoint(), fetch: this.fetch });
      this.#open.set(serverId, connection);
    }
    return connection;
  }

  async drop(serverId: string): Promise<void> {
    const connection = this.#open.get(serverId);
    this.#open.delete(serverId);
    await connection?.close();
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    const all = [...this.#open.values()];
    this.#open.clear();
    await Promise.all(all.map((c) => c.close()));
    this.#pinned.close();
  }

  #closeIdle(): void {
    const before = Date.now() - this.#idleMs;
    for (const [id, connection] of this.#open) {
      if (connection.lastUsed < before) void this.drop(id);
    }
  }
}
