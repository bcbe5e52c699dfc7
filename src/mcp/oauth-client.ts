import { type OAuthClientProvider, type OAuthDiscoveryState, refreshAuthorization } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { Fetch } from "./pinned-fetch.ts";

/** What a registration asks of the authorization server (upstream's `McpOauthAuth`). */
export interface OAuthSettings {
  scopes: string[];
  clientName?: string;
  clientMetadataUrl?: string;
}

/** Everything roz keeps of one server's OAuth authorization; sealed at rest, never returned. */
export interface OAuthGrant {
  settings: OAuthSettings;
  /** The callback URL the client was registered and authorized with. */
  redirectUrl: string;
  /** The registered client, as the SDK gave it (with its secret, if the server issued one). */
  client?: OAuthClientInformationMixed;
  /** Protected-resource and authorization-server metadata, so that a refresh needs no discovery. */
  discovery?: OAuthDiscoveryState;
  tokens?: OAuthTokens;
  /** When `tokens` arrived (ms since the epoch), for their `expires_in`. */
  obtainedAt?: number;
}

/** Where a connection's grant lives: reloaded before a refresh (another node may have done it), saved after. */
export interface GrantKeeper {
  load(): Promise<OAuthGrant | undefined>;
  save(grant: OAuthGrant): Promise<void>;
}

export interface OAuthClientOptions {
  grant: OAuthGrant;
  fetch: Fetch;
  /** The authorization flow (Register and its callback): the `state` to send, and no refreshing. */
  interactive?: { state?: string; verifier?: string };
  keeper?: GrantKeeper;
}

/** How long before its end an access token is refreshed: a quarter of its life, at most 30 s. */
const refreshMarginMs = (lifetimeMs: number): number => Math.min(30_000, lifetimeMs / 4);

export const REAUTHORIZE = "the MCP server's OAuth authorization is no longer valid: register the server again to authorize it";

/**
 * The MCP SDK's `OAuthClientProvider` over one server's grant. For Register and the callback
 * (`interactive`) it records what `auth()` produces: the registered client, the discovery, the
 * PKCE verifier and the authorization URL. For a connection it hands the access token to the
 * transport, refreshes it shortly before it expires (the SDK itself refreshes on a 401) and
 * saves every new token through the keeper; it never starts an authorization, which needs a
 * user: then the call fails with `REAUTHORIZE`.
 */
export class OAuthClient implements OAuthClientProvider {
  readonly #fetch: Fetch;
  readonly #interactive: OAuthClientOptions["interactive"];
  readonly #keeper: GrantKeeper | undefined;
  #grant: OAuthGrant;
  #verifier: string | undefined;
  #refreshing: Promise<void> | undefined;
  /** Set by `auth()` in the authorization flow. */
  authorizationUrl: URL | undefined;
  readonly clientMetadataUrl?: string;

  constructor(options: OAuthClientOptions) {
    this.#fetch = options.fetch;
    this.#interactive = options.interactive;
    this.#keeper = options.keeper;
    this.#grant = options.grant;
    this.#verifier = options.interactive?.verifier;
    if (options.grant.settings.clientMetadataUrl !== undefined) this.clientMetadataUrl = options.grant.settings.clientMetadataUrl;
  }

  get grant(): OAuthGrant {
    return this.#grant;
  }

  get verifier(): string | undefined {
    return this.#verifier;
  }

  get redirectUrl(): string {
    return this.#grant.redirectUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    const { scopes, clientName } = this.#grant.settings;
    return {
      client_name: clientName ?? "roz",
      redirect_uris: [this.#grant.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      ...(scopes.length > 0 ? { scope: scopes.join(" ") } : {}),
    };
  }

  state(): string {
    const state = this.#interactive?.state;
    if (state === undefined) throw new Error(REAUTHORIZE);
    return state;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.#grant.client;
  }

  saveClientInformation(client: OAuthClientInformationMixed): void {
    this.#grant = { ...this.#grant, client };
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    if (this.#interactive === undefined && this.#expiring()) {
      this.#refreshing ??= this.#refresh().finally(() => {
        this.#refreshing = undefined;
      });
      // A refresh that fails leaves the old token: the server's 401 then has the SDK try once more.
      await this.#refreshing.catch(() => undefined);
    }
    return this.#grant.tokens;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    this.#grant = { ...this.#grant, tokens, obtainedAt: Date.now() };
    await this.#keeper?.save(this.#grant);
  }

  redirectToAuthorization(authorizationUrl: URL): void {
    if (this.#interactive === undefined) throw new Error(REAUTHORIZE);
    this.authorizationUrl = authorizationUrl;
  }

  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }

  codeVerifier(): string {
    if (this.#verifier === undefined) throw new Error("no PKCE verifier for this authorization");
    return this.#verifier;
  }

  saveDiscoveryState(discovery: OAuthDiscoveryState): void {
    this.#grant = { ...this.#grant, discovery };
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.#grant.discovery;
  }

  /**
   * The authorization server refused what we hold. A connection's tokens are not dropped but
   * replaced by the newest we know, here or in the store: a refresh racing another (on this
   * node or another) may have rotated them, and a connection left without tokens could never
   * recover. Tokens truly revoked then fail again, with the server's error.
   */
  async invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): Promise<void> {
    if (scope === "verifier") this.#verifier = undefined;
    if (scope === "discovery" || scope === "all") this.#grant = { ...this.#grant, discovery: undefined };
    if (scope === "client" || scope === "all") this.#grant = { ...this.#grant, client: undefined };
    if (scope !== "tokens" && scope !== "all") return;
    if (this.#keeper === undefined) this.#grant = { ...this.#grant, tokens: undefined, obtainedAt: undefined };
    else await this.#adoptNewer().catch(() => false);
  }

  /** Takes the stored tokens when they are newer than ours (another refresh saved them). */
  async #adoptNewer(): Promise<boolean> {
    const stored = await this.#keeper?.load();
    if (stored?.tokens === undefined || (stored.obtainedAt ?? 0) <= (this.#grant.obtainedAt ?? 0)) return false;
    this.#grant = { ...this.#grant, tokens: stored.tokens, obtainedAt: stored.obtainedAt };
    return true;
  }

  #expiring(): boolean {
    const { tokens, obtainedAt } = this.#grant;
    if (tokens?.expires_in === undefined || obtainedAt === undefined) return false;
    const lifetimeMs = tokens.expires_in * 1000;
    return Date.now() >= obtainedAt + lifetimeMs - refreshMarginMs(lifetimeMs);
  }

  async #refresh(): Promise<void> {
    if ((await this.#adoptNewer()) && !this.#expiring()) return;
    const { client, discovery, tokens } = this.#grant;
    if (client === undefined || discovery === undefined || tokens?.refresh_token === undefined) return;
    const resource = discovery.resourceMetadata?.resource;
    const fresh = await refreshAuthorization(discovery.authorizationServerUrl, {
      ...(discovery.authorizationServerMetadata ? { metadata: discovery.authorizationServerMetadata } : {}),
      clientInformation: client,
      refreshToken: tokens.refresh_token,
      ...(resource !== undefined ? { resource } : {}),
      fetchFn: this.#fetch,
    });
    // Stamped with the authorization server as the SDK's own auth() does, so that it keeps using them.
    await this.saveTokens({ ...fresh, issuer: String(discovery.authorizationServerUrl) });
  }
}
