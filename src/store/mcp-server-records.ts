/**
 * MCP servers registered as tool sources (session-behaviour.md §12). The store keeps the
 * credentials as the sealed text it is given: sealing and opening happen above it.
 */

export type McpAuthKind = "none" | "bearer" | "static_header" | "oauth";
export type McpHealth = "healthy" | "degraded";

export interface McpServerRecord {
  id: string;
  tenantId: string;
  /** Set when the server belongs to one session only. */
  sessionId?: string;
  name: string;
  url: string;
  enabled: boolean;
  authKind: McpAuthKind;
  /** Sealed credentials (never returned to clients); absent for `none`. */
  sealedCredentials?: string;
  health: McpHealth;
  failureCount: number;
  degradedAt?: number;
  lastError?: string;
  createdAt: number;
  updatedAt: number;
}

export type NewMcpServer = Pick<McpServerRecord, "sessionId" | "name" | "url" | "enabled" | "authKind" | "sealedCredentials">;

/** A health change; `degradedAt`/`lastError` `null` clears them. */
export interface McpHealthChange {
  health: McpHealth;
  failureCount: number;
  degradedAt: number | null;
  lastError: string | null;
}

/** An OAuth authorization waiting for the user's browser (its callback takes it once). */
export interface McpOauthPending {
  /** The approval id `Register` answered. */
  id: string;
  /** SHA-256 of the OAuth `state`, hex: the state itself is not stored. */
  stateHash: string;
  tenantId: string;
  serverId: string;
  /** Sealed: the PKCE verifier and the registered client (never returned). */
  sealed: string;
  expiresAt: number;
  createdAt: number;
}

export type NewMcpOauthPending = Omit<McpOauthPending, "createdAt">;

export interface McpServerStore {
  /**
   * Registers `input.name` for the tenant, replacing a server of that name in the same scope
   * (tenant-wide, or the same session); its health starts over. A name used in the other scope
   * (or by another session) throws `conflict`.
   */
  putMcpServer(tenantId: string, input: NewMcpServer): Promise<McpServerRecord>;
  /** The tenant's servers by name; with `sessionId`, only those that session can see. */
  listMcpServers(tenantId: string, sessionId?: string): Promise<McpServerRecord[]>;
  getMcpServer(tenantId: string, name: string): Promise<McpServerRecord | undefined>;
  /** False when unknown. */
  deleteMcpServer(tenantId: string, name: string): Promise<boolean>;
  /** Deletes the servers registered for one session alone (it ended); returns their ids. */
  deleteSessionMcpServers(tenantId: string, sessionId: string): Promise<string[]>;
  /** Records a health change of the server with this id; false when it no longer exists. */
  setMcpServerHealth(id: string, change: McpHealthChange): Promise<boolean>;
  /** Replaces the sealed credentials of the server with this id (OAuth tokens); false when it no longer exists. */
  setMcpServerCredentials(id: string, sealedCredentials: string): Promise<boolean>;
  /** Stores a pending OAuth authorization (and drops the expired ones of every tenant). */
  putMcpOauthPending(pending: NewMcpOauthPending): Promise<void>;
  /**
   * Takes the pending authorization with this state hash: returns and deletes it in one step,
   * so that of two callbacks with the same state (on any nodes) one gets it. Expired ones are
   * returned too (the caller tells the user); undefined when unknown or already taken.
   */
  takeMcpOauthPending(stateHash: string): Promise<McpOauthPending | undefined>;
}
