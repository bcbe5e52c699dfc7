import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { issueKey } from "../../src/auth/index.ts";
import { AgentService, type SessionResponse, type StartSessionSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { openConnectSession, type ConnectSession } from "../server/connect-session.ts";
import { startServer, type TestServer } from "../support/server.ts";

/**
 * A real server with authentication on (`ROZ_AUTH=required`, loopback, SQLite in a temp
 * dir). Until the first key exists it runs open; `makeKey` before the first request closes it.
 */
export function startAuthServer(env: Record<string, string> = {}): Promise<TestServer> {
  return startServer({ ROZ_AUTH: "required", ROZ_KEEPALIVE_INTERVAL_MS: "3600000", ...env });
}

export interface TestKey {
  secret: string;
  id: string;
  tenantId: string;
}

/** Creates a key straight in the server's store (the CLI's path), for test setup. */
export async function makeKey(server: TestServer, tenant: string, scopes: string[] = ["admin"], name = "test"): Promise<TestKey> {
  const t = await server.app.store.ensureTenant(tenant);
  const { key, secret } = await issueKey(server.app.store, { tenantId: t.id, name, scopes });
  return { secret, id: key.id, tenantId: t.id };
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body (undefined when empty or not JSON). */
  json: any;
}

export interface RequestOptions {
  key?: string | undefined;
  /** Sent as JSON unless `raw` is given. */
  body?: unknown;
  /** A body sent as is (with `contentType`). */
  raw?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

/** One HTTP/1.1 request with fetch; never throws for a status. */
export async function request(baseUrl: string, method: string, path: string, opts: RequestOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined) headers["authorization"] = `Bearer ${opts.key}`;
  let body: string | undefined;
  if (opts.raw !== undefined) {
    body = opts.raw;
    if (opts.contentType) headers["content-type"] = opts.contentType;
  } else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] = opts.contentType ?? "application/json";
  }
  const res = await fetch(baseUrl + path, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** `request` bound to a server and a key. */
export function client(server: { url: string }, key?: string) {
  const go =
    (method: string) =>
    (path: string, opts: Omit<RequestOptions, "key"> = {}) =>
      request(server.url, method, path, { key, ...opts });
  return { get: go("GET"), post: go("POST"), patch: go("PATCH"), delete: go("DELETE") };
}

/** gRPC over h2c with `authorization: Bearer <key>` on every call (none when `key` is undefined). */
export function grpcTransport(url: string, key?: string): Transport {
  const auth: Interceptor = (next) => async (req) => {
    if (key !== undefined) req.header.set("authorization", `Bearer ${key}`);
    return next(req);
  };
  return createGrpcTransport({ baseUrl: url, interceptors: [auth] });
}

/** How a StreamSession `start` went: the first message and, for a failed one, the final error. */
export interface StartOutcome {
  first: SessionResponse;
  session: ConnectSession;
  /** The call's end: undefined while it runs (started) or for OK. */
  error?: ConnectError | undefined;
}

/** Opens StreamSession and sends `start`; for a fatal answer, waits for the RPC status too. */
export async function startSession(url: string, key: string | undefined, start: MessageInitShape<typeof StartSessionSchema> = {}): Promise<StartOutcome> {
  const session = openConnectSession(grpcTransport(url, key));
  session.send({ request: { case: "start", value: start } });
  const first = await session.next(10_000);
  if (first.response.case === "sessionStarted") return { first, session };
  return { first, session, error: await session.done };
}

/** Runs WatchTeam to its end and returns the error it ended with (undefined = OK). */
export async function watchTeam(url: string, key: string | undefined, taskId: string): Promise<ConnectError | undefined> {
  const rpc = createClient(AgentService, grpcTransport(url, key));
  try {
    for await (const event of rpc.watchTeam({ taskId }, { timeoutMs: 10_000 })) void event;
    return undefined;
  } catch (err) {
    return ConnectError.from(err);
  }
}
