import type { McpAuthKind, McpHealth } from "../store/index.ts";
import type { McpAuth } from "./credentials.ts";

/** A registered server as clients see it: never its credentials, only whether it has some. */
export interface McpServerView {
  name: string;
  url: string;
  enabled: boolean;
  authKind: McpAuthKind;
  health: McpHealth;
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

/** A server left the healthy ones: what each session that saw it is told. */
export interface McpDegradation {
  tenantId: string;
  serverId: string;
  serverName: string;
  failureCount: number;
  lastError: string;
}
