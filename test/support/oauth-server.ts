/**
 * A minimal OAuth 2.1 authorization server for the MCP OAuth tests: metadata (RFC 8414),
 * dynamic client registration (RFC 7591, confidential clients with a secret), `/authorize`
 * that redirects straight back with a code while the test approves (or with `access_denied`),
 * and `/token` with the PKCE S256 check, client authentication, and `refresh_token` grants that
 * rotate the refresh token. Access tokens live `accessTokenTtlS` (tests shorten it to see them expire).
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

interface Client {
  secret: string;
  redirectUris: string[];
}

interface Code {
  clientId: string;
  challenge: string;
  redirectUri: string;
  scope: string;
}

export interface TestOAuthServer {
  /** The issuer (and authorization server URL). */
  readonly url: string;
  /** Requests per path, e.g. `/token`. */
  readonly hits: Record<string, number>;
  /** Grants served per type (`authorization_code`, `refresh_token`). */
  readonly grants: Record<string, number>;
  /** The scopes asked for in each authorization request. */
  readonly scopesAsked: string[];
  /** Whether `/authorize` grants (default) or answers `access_denied`. */
  approve: boolean;
  accessTokenTtlS: number;
  /** True when `token` is an access token issued here and not expired. */
  valid(token: string): boolean;
  /** Expires every access token issued so far (the next request with one gets a 401). */
  expireAll(): void;
  /** Every secret issued: client secrets, codes, access and refresh tokens. */
  secrets(): string[];
  close(): Promise<void>;
}

const token = (prefix: string): string => `${prefix}-${randomBytes(18).toString("base64url")}`;

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(body));
}

export async function startOAuthServer(): Promise<TestOAuthServer> {
  const clients = new Map<string, Client>();
  const codes = new Map<string, Code>();
  const access = new Map<string, number>();
  const refresh = new Map<string, string>();
  const issued: string[] = [];
  let url = "";

  /** The client a token request authenticates as (basic or post), if its secret matches. */
  const clientOf = (req: IncomingMessage, form: URLSearchParams): string | undefined => {
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    const [id, secret] = basic
      ? Buffer.from(basic, "base64").toString("utf8").split(":").map(decodeURIComponent)
      : [form.get("client_id") ?? "", form.get("client_secret") ?? ""];
    return id !== undefined && clients.get(id)?.secret === secret ? id : undefined;
  };

  const issue = (clientId: string): Record<string, unknown> => {
    const at = token("at");
    const rt = token("rt");
    access.set(at, Date.now() + state.accessTokenTtlS * 1000);
    refresh.set(rt, clientId);
    issued.push(at, rt);
    return { access_token: at, token_type: "Bearer", expires_in: state.accessTokenTtlS, refresh_token: rt };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const at = new URL(req.url ?? "/", url);
    state.hits[at.pathname] = (state.hits[at.pathname] ?? 0) + 1;
    if (at.pathname === "/.well-known/oauth-authorization-server") {
      json(res, 200, {
        issuer: url,
        authorization_endpoint: `${url}/authorize`,
        token_endpoint: `${url}/token`,
        registration_endpoint: `${url}/register`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
      });
    } else if (at.pathname === "/register" && req.method === "POST") {
      const meta = JSON.parse(await bodyOf(req)) as { redirect_uris?: string[] };
      const id = token("client");
      const secret = token("cs");
      clients.set(id, { secret, redirectUris: meta.redirect_uris ?? [] });
      issued.push(secret);
      json(res, 201, { ...meta, client_id: id, client_secret: secret, client_id_issued_at: Math.floor(Date.now() / 1000), client_secret_expires_at: 0 });
    } else if (at.pathname === "/authorize") {
      const q = at.searchParams;
      const client = clients.get(q.get("client_id") ?? "");
      const redirectUri = q.get("redirect_uri") ?? "";
      if (client === undefined || !client.redirectUris.includes(redirectUri) || q.get("code_challenge_method") !== "S256") {
        json(res, 400, { error: "invalid_request" });
        return;
      }
      state.scopesAsked.push(q.get("scope") ?? "");
      const back = new URL(redirectUri);
      back.searchParams.set("state", q.get("state") ?? "");
      if (state.approve) {
        const code = token("code");
        codes.set(code, { clientId: q.get("client_id")!, challenge: q.get("code_challenge") ?? "", redirectUri, scope: q.get("scope") ?? "" });
        issued.push(code);
        back.searchParams.set("code", code);
      } else {
        back.searchParams.set("error", "access_denied");
      }
      res.writeHead(302, { location: back.href }).end();
    } else if (at.pathname === "/token" && req.method === "POST") {
      const form = new URLSearchParams(await bodyOf(req));
      const clientId = clientOf(req, form);
      if (clientId === undefined) return json(res, 401, { error: "invalid_client" });
      const grant = form.get("grant_type") ?? "";
      if (grant === "authorization_code") {
        const code = codes.get(form.get("code") ?? "");
        codes.delete(form.get("code") ?? "");
        const challenge = createHash("sha256")
          .update(form.get("code_verifier") ?? "")
          .digest("base64url");
        if (code === undefined || code.clientId !== clientId || code.challenge !== challenge || code.redirectUri !== form.get("redirect_uri")) {
          return json(res, 400, { error: "invalid_grant" });
        }
      } else if (grant === "refresh_token") {
        const old = form.get("refresh_token") ?? "";
        if (refresh.get(old) !== clientId) return json(res, 400, { error: "invalid_grant" });
        refresh.delete(old);
      } else {
        return json(res, 400, { error: "unsupported_grant_type" });
      }
      state.grants[grant] = (state.grants[grant] ?? 0) + 1;
      json(res, 200, issue(clientId));
    } else {
      json(res, 404, { error: "not_found" });
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const state: TestOAuthServer = {
    url,
    hits: {},
    grants: {},
    scopesAsked: [],
    approve: true,
    accessTokenTtlS: 3600,
    valid: (t) => (access.get(t) ?? 0) > Date.now(),
    expireAll: () => {
      for (const t of access.keys()) access.set(t, 0);
    },
    secrets: () => [...issued],
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return state;
}
