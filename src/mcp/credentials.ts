import { RozError } from "../errors/index.ts";
import type { McpAuthKind } from "../store/index.ts";
import type { OAuthSettings } from "./oauth-client.ts";
import type { SecretBox } from "./secret-box.ts";

/** How a server is authenticated, with its secrets (never stored or logged in the clear). */
export type McpAuth =
  | { kind: "none" }
  | { kind: "bearer"; token: string }
  | { kind: "static_header"; headerName: string; headerValue: string }
  | { kind: "oauth"; scopes: string[]; clientName?: string; clientMetadataUrl?: string };

/** An HTTP header name (RFC 9110 token) that the transport does not set itself. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const RESERVED_HEADERS = new Set([
  "host",
  "content-length",
  "content-type",
  "accept",
  "connection",
  "transfer-encoding",
  "mcp-session-id",
  "mcp-protocol-version",
]);
/** A header value without control characters (no header injection). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]{1,8192}$/;

/** An OAuth scope token (RFC 6749 §3.3). */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]{1,256}$/;

function checkOAuth(auth: Extract<McpAuth, { kind: "oauth" }>): void {
  if (auth.scopes.length > 64 || !auth.scopes.every((s) => SCOPE.test(s))) {
    throw new RozError("invalid_argument", "auth.oauth.scopes must be at most 64 OAuth scope tokens (no spaces or quotes)");
  }
  if (auth.clientName !== undefined && (auth.clientName.length === 0 || auth.clientName.length > 200)) {
    throw new RozError("invalid_argument", "auth.oauth.client_name must be 1-200 characters");
  }
  const url = auth.clientMetadataUrl;
  if (url !== undefined && (!URL.canParse(url) || new URL(url).protocol !== "https:" || new URL(url).pathname === "/")) {
    throw new RozError("invalid_argument", "auth.oauth.client_metadata_url must be an https:// URL with a path");
  }
}

/** What an OAuth registration asks of the authorization server. */
export const settingsOf = (auth: Extract<McpAuth, { kind: "oauth" }>): OAuthSettings => ({
  scopes: auth.scopes,
  ...(auth.clientName !== undefined ? { clientName: auth.clientName } : {}),
  ...(auth.clientMetadataUrl !== undefined ? { clientMetadataUrl: auth.clientMetadataUrl } : {}),
});

/** Validates the auth of a registration; throws `invalid_argument` naming the field. */
export function checkAuth(auth: McpAuth): void {
  if (auth.kind === "oauth") checkOAuth(auth);
  if (auth.kind === "bearer" && !HEADER_VALUE.test(auth.token)) throw new RozError("invalid_argument", "auth.bearer.token must be a non-empty header value");
  if (auth.kind !== "static_header") return;
  if (!HEADER_NAME.test(auth.headerName) || RESERVED_HEADERS.has(auth.headerName.toLowerCase())) {
    throw new RozError("invalid_argument", "auth.static_header.header_name must be an HTTP header name the transport does not set itself");
  }
  if (!HEADER_VALUE.test(auth.headerValue)) throw new RozError("invalid_argument", "auth.static_header.header_value must be a non-empty header value");
}

/** The secret part of `auth` to seal, or undefined when it has none. */
export function secretOf(auth: McpAuth): string | undefined {
  if (auth.kind === "bearer") return JSON.stringify({ token: auth.token });
  if (auth.kind === "static_header") return JSON.stringify({ name: auth.headerName, value: auth.headerValue });
  return undefined;
}

/** The sealing owner of a server's credentials: tenant and name. */
export const ownerOf = (tenantId: string, name: string): string => `${tenantId}/${name}`;

/** The request headers that authenticate a server, from its sealed credentials. */
export function headersOf(kind: McpAuthKind, sealed: string | undefined, owner: string, box: SecretBox | undefined): Record<string, string> {
  if (sealed === undefined || kind === "none") return {};
  if (box === undefined) throw new RozError("secret_key_missing");
  const secret = JSON.parse(box.open(sealed, owner)) as { token?: string; name?: string; value?: string };
  if (kind === "bearer") return { authorization: `Bearer ${secret.token ?? ""}` };
  if (kind === "static_header" && secret.name !== undefined) return { [secret.name]: secret.value ?? "" };
  return {};
}
