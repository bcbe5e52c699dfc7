import { createHash, randomBytes, randomUUID } from "node:crypto";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { RozError } from "../errors/index.ts";
import type { McpServerRecord, Store } from "../store/index.ts";
import { ownerOf } from "./credentials.ts";
import { type GrantKeeper, OAuthClient, type OAuthGrant, type OAuthSettings } from "./oauth-client.ts";
import type { Fetch } from "./pinned-fetch.ts";
import type { SecretBox } from "./secret-box.ts";

/** Where the authorization server sends the user's browser back, under `ROZ_PUBLIC_URL`. */
export const OAUTH_CALLBACK_PATH = "/v1/mcp/oauth/callback";
/** How long the user has to approve. */
const PENDING_TTL_MS = 15 * 60_000;

/** An authorization started by `Register`, until the callback stores it. */
export interface OAuthPending {
  approvalId: string;
  authorizationUrl: string;
}

/** The authorization server's redirect to the callback, as its query says. */
export interface OAuthCallback {
  state: string;
  code?: string;
  error?: string;
  errorDescription?: string;
}

/** An authorization flow begun but not yet stored (its server is registered in between). */
interface Begun {
  state: string;
  authorizationUrl: string;
  grant: OAuthGrant;
  verifier: string;
}

/** What a pending row seals: enough for any node to finish the flow. */
interface PendingSecret {
  serverName: string;
  grant: OAuthGrant;
  verifier: string;
}

export interface McpOAuthDeps {
  store: Pick<Store, "putMcpOauthPending" | "takeMcpOauthPending" | "setMcpServerCredentials" | "getMcpServer">;
  box: SecretBox;
  fetch: Fetch;
  /** `ROZ_PUBLIC_URL`, or the address this node listens on. */
  publicUrl: () => string;
  pendingTtlMs?: number;
}

const hashOf = (state: string): string => createHash("sha256").update(state).digest("hex");
const pendingOwner = (approvalId: string): string => `mcp-oauth-pending/${approvalId}`;

/**
 * An OAuth failure as the client sees it: the first clause of the SDK's message, without the
 * response body it may quote (nor the cause, which goes nowhere).
 */
function failed(err: unknown, what: string): RozError {
  if (err instanceof RozError) return err;
  const message = (err instanceof Error ? err.message : String(err)).split(/\n|\. Raw body:|: \[/)[0] ?? "";
  return new RozError("mcp_oauth_failed", `${what}: ${message.slice(0, 200)}`);
}

/**
 * OAuth 2.1 for MCP servers through the SDK's client auth (session-behaviour.md §12): `begin`
 * runs discovery (protected-resource and authorization-server metadata), dynamic client
 * registration and the PKCE authorization URL; `pend` stores the approval in the database so
 * that the callback may reach any node; `complete` takes it once (state bound, single use,
 * expiring), exchanges the code and stores the tokens sealed on the server's row.
 */
export class McpOAuth {
  readonly #deps: McpOAuthDeps;

  constructor(deps: McpOAuthDeps) {
    this.#deps = deps;
  }

  async begin(serverUrl: string, settings: OAuthSettings): Promise<Begun> {
    const state = randomBytes(32).toString("base64url");
    const grant: OAuthGrant = { settings, redirectUrl: this.#deps.publicUrl().replace(/\/+$/, "") + OAUTH_CALLBACK_PATH };
    const client = new OAuthClient({ grant, fetch: this.#deps.fetch, interactive: { state } });
    try {
      const result = await auth(client, { serverUrl, fetchFn: this.#deps.fetch });
      if (result !== "REDIRECT" || client.authorizationUrl === undefined || client.verifier === undefined) {
        throw new Error("the authorization server gave no authorization step");
      }
      return { state, authorizationUrl: client.authorizationUrl.href, grant: client.grant, verifier: client.verifier };
    } catch (err) {
      throw failed(err, "OAuth discovery or client registration failed");
    }
  }

  /** Stores the approval of `begun` for `server`, just registered. */
  async pend(server: McpServerRecord, begun: Begun): Promise<OAuthPending> {
    const approvalId = randomUUID();
    const secret: PendingSecret = { serverName: server.name, grant: begun.grant, verifier: begun.verifier };
    await this.#deps.store.putMcpOauthPending({
      id: approvalId,
      stateHash: hashOf(begun.state),
      tenantId: server.tenantId,
      serverId: server.id,
      sealed: this.#deps.box.seal(JSON.stringify(secret), pendingOwner(approvalId)),
      expiresAt: Date.now() + (this.#deps.pendingTtlMs ?? PENDING_TTL_MS),
    });
    return { approvalId, authorizationUrl: begun.authorizationUrl };
  }

  /** The callback: the server is authorized (its tokens stored) or a coded error says why not. */
  async complete(callback: OAuthCallback): Promise<McpServerRecord> {
    const pending = await this.#deps.store.takeMcpOauthPending(hashOf(callback.state));
    if (pending === undefined) {
      throw new RozError("mcp_oauth_state_invalid", "unknown or already used OAuth state: start again by registering the server");
    }
    if (pending.expiresAt <= Date.now()) throw new RozError("mcp_oauth_state_expired");
    const secret = JSON.parse(this.#deps.box.open(pending.sealed, pendingOwner(pending.id))) as PendingSecret;
    const server = await this.#deps.store.getMcpServer(pending.tenantId, secret.serverName);
    if (server === undefined || server.id !== pending.serverId) throw new RozError("mcp_oauth_state_invalid", "the MCP server was deleted or registered again");
    if (callback.error !== undefined || callback.code === undefined) {
      const reason = callback.error ?? "no code";
      const detail = callback.errorDescription !== undefined ? ` (${callback.errorDescription.slice(0, 200)})` : "";
      throw new RozError("mcp_oauth_denied", `the authorization server answered ${reason.slice(0, 100)}${detail}: register the server again to retry`);
    }
    const client = new OAuthClient({ grant: secret.grant, fetch: this.#deps.fetch, interactive: { verifier: secret.verifier } });
    try {
      const result = await auth(client, { serverUrl: server.url, authorizationCode: callback.code, fetchFn: this.#deps.fetch });
      if (result !== "AUTHORIZED") throw new Error("the authorization server gave no tokens");
    } catch (err) {
      throw failed(err, "exchanging the authorization code failed");
    }
    const sealed = this.#seal(server, client.grant);
    if (!(await this.#deps.store.setMcpServerCredentials(server.id, sealed))) throw new RozError("mcp_oauth_state_invalid", "the MCP server was deleted");
    return { ...server, sealedCredentials: sealed };
  }

  /** The SDK auth provider of an authorized server's connection: refreshed tokens are stored for every node. */
  clientFor(server: McpServerRecord): OAuthClient {
    if (server.sealedCredentials === undefined) throw new Error("the MCP server is waiting for its OAuth authorization");
    const owner = ownerOf(server.tenantId, server.name);
    const open = (sealed: string): OAuthGrant => JSON.parse(this.#deps.box.open(sealed, owner)) as OAuthGrant;
    const keeper: GrantKeeper = {
      load: async () => {
        const now = await this.#deps.store.getMcpServer(server.tenantId, server.name);
        return now?.id === server.id && now.sealedCredentials !== undefined ? open(now.sealedCredentials) : undefined;
      },
      save: async (grant) => {
        await this.#deps.store.setMcpServerCredentials(server.id, this.#seal(server, grant));
      },
    };
    return new OAuthClient({ grant: open(server.sealedCredentials), fetch: this.#deps.fetch, keeper });
  }

  #seal(server: McpServerRecord, grant: OAuthGrant): string {
    return this.#deps.box.seal(JSON.stringify(grant), ownerOf(server.tenantId, server.name));
  }
}
