/**
 * MCP servers as tool sources (session-behaviour.md §12): registry, connections through the
 * official SDK client, health, and the tools each session is offered.
 */
export { AddressGuard, type Lookup } from "./address-guard.ts";
export { McpConnections } from "./connections.ts";
export type { McpAuth } from "./credentials.ts";
export { guardedFetch } from "./guarded-fetch.ts";
export { type Fetch, type PinnedFetch, pinnedFetch } from "./pinned-fetch.ts";
export { DEGRADE_AFTER, McpHealth } from "./health.ts";
export { McpServers, type McpServersDeps } from "./mcp-servers.ts";
export { McpOAuth, OAUTH_CALLBACK_PATH, type OAuthCallback, type OAuthPending } from "./oauth-approvals.ts";
export { type GrantKeeper, OAuthClient, type OAuthGrant, REAUTHORIZE } from "./oauth-client.ts";
export { parseSecretKey, SecretBox } from "./secret-box.ts";
export { SessionMcpTools, type SessionMcpLink, toolPrefix } from "./session-tools.ts";
export type { McpDegradation, McpRegistered, McpRegistration, McpServerView } from "./types.ts";
