import type { McpAuthKind, McpHealth } from "../store/index.ts";
import type { McpAuth } from "./credentials.ts";
import type { OAuthPending } from "./oauth-approvals.ts";

/** A registered server as clients see it: never its credentials, only whether it has some. */
export interface McpServerView {
  name: string;
  url: string;
  enabled: boolean;
  authKind: McpAuthKind;
  /** `oauth_pending`: an OAuth server its user has not authorized yet (not offered to sessions). */
  health: McpHealth | "oauth_pending";
  failureCount: number;
  degradedAt?: number;
  lastError?: string;
  hasCredentials: boolean;
  sessionId?: string;
}

export interface McpRegistration {
  name: string;
  url: string;
  enabled: boolean;
  auth: McpAuth;
  sessionId?: string;
}

/** What `Register` answers: the server, and for OAuth the authorization its user must approve. */
export interface McpRegistered {
  server: McpServerView;
  oauthPending?: OAuthPending;
}

/** A server left the healthy ones: what each session that saw it is told. */
export interface McpDegradation {
  tenantId: string;
  serverId: string;
  serverName: string;
  failureCount: number;
  lastError: string;
}
