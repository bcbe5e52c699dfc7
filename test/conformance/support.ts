/**
 * A server on the offline `scripted` model plus client factories for both client stacks,
 * for the conformance suites: each check reads like a line of the spec. One per file.
 */
import type { AppOverrides } from "../../src/app/app.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { type ClientKind, type SessionClient, type SessionClientFactory, sessionClientFactory } from "../support/session-client.ts";
import { rq, startSession, type StartInit, type ValueOf } from "../support/session-protocol.ts";

/** gRPC status codes (Connect's `Code` has the same numbers). */
export const GRPC = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  INTERNAL: 13,
  UNAUTHENTICATED: 16,
} as const;

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A user message that makes the scripted model play `responses` (src/models/scripted/README.md). */
export const script = (responses: unknown[][], extra: Record<string, unknown> = {}): string => `script: ${JSON.stringify({ responses, ...extra })}`;

export interface World {
  readonly server: TestServer;
  /** Opens a call (ended by `reset()`). */
  open(kind: ClientKind, headers?: Record<string, string>): SessionClient;
  /** Opens a call and starts a session on it. */
  start(kind: ClientKind, start?: StartInit): Promise<{ client: SessionClient; started: ValueOf<"sessionStarted"> }>;
  /** Ends every call this test opened (cancel_session + half-close) and waits for them. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a server (keepalives off unless `env` sets them) and its client factories. */
export async function startWorld(env: Record<string, string> = {}, overrides: AppOverrides = {}): Promise<World> {
  const server = await startServer({ ROZ_KEEPALIVE_INTERVAL_MS: "3600000", ROZ_DETACH_GRACE_MS: "300", ...env }, overrides);
  const factories = new Map<ClientKind, SessionClientFactory>();
  let clients: SessionClient[] = [];
  const open = (kind: ClientKind, headers?: Record<string, string>): SessionClient => {
    let factory = factories.get(kind);
    if (!factory) factories.set(kind, (factory = sessionClientFactory(kind, server.url)));
    const client = factory.open(headers);
    clients.push(client);
    return client;
  };
  return {
    server,
    open,
    async start(kind, start = {}) {
      const client = open(kind);
      return { client, started: await startSession(client, start) };
    },
    async reset() {
      const open = clients;
      clients = [];
      for (const client of open) {
        if (client.ended) continue;
        client.send(rq.cancelSession("test over"));
        client.end();
      }
      const giveUp = new Promise((resolve) => setTimeout(resolve, 5_000).unref());
      await Promise.race([Promise.all(open.map((c) => c.status)), giveUp]);
      for (const client of open) if (!client.ended) client.cancel();
    },
    async close() {
      for (const factory of factories.values()) factory.close();
      await server.close();
    },
  };
}
