// What a browser-like client sees: CORS for the origins of ROZ_CORS_ORIGINS (DESIGN.md) and
// WatchTeam's statuses (session-behaviour.md §7) over gRPC-Web, with auth required.
import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueKey } from "../../src/auth/index.ts";
import { AgentService } from "../../src/gen/roz/v1/agent_pb.js";
import { startServer, type TestServer } from "../support/server.ts";

const ORIGIN = "http://console.example";

let server: TestServer;
let secret: string;
beforeAll(async () => {
  server = await startServer({ ROZ_AUTH: "required", ROZ_CORS_ORIGINS: `http://other.example, ${ORIGIN}` });
  const tenant = await server.app.store.ensureTenant("acme");
  secret = (await issueKey(server.app.store, { tenantId: tenant.id, name: "browser", scopes: ["sessions", "tasks"] })).secret;
});
afterAll(() => server?.close());

/** Runs WatchTeam to its end; the error it ended with (undefined = OK). */
async function watchTeam(transport: Transport, taskId: string, headers: Record<string, string> = {}): Promise<ConnectError | undefined> {
  try {
    for await (const event of createClient(AgentService, transport).watchTeam({ taskId }, { headers, timeoutMs: 10_000 })) void event;
    return undefined;
  } catch (err) {
    return ConnectError.from(err);
  }
}

const headerList = (value: string | null): string[] =>
  (value ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== "");

describe.each(["1.1", "2"] as const)("WatchTeam over gRPC-Web (HTTP/%s)", (httpVersion) => {
  const transport = (): Transport => createGrpcWebTransport({ httpVersion, baseUrl: server.url });

  it("no credentials → UNAUTHENTICATED, also for a malformed id", async () => {
    expect((await watchTeam(transport(), randomUUID()))?.code).toBe(Code.Unauthenticated);
    expect((await watchTeam(transport(), "nope"))?.code).toBe(Code.Unauthenticated);
  });

  it("a wrong key → UNAUTHENTICATED", async () => {
    expect((await watchTeam(transport(), randomUUID(), { authorization: "Bearer roz_sk_wrong" }))?.code).toBe(Code.Unauthenticated);
  });

  it("with a valid key: unknown task → NOT_FOUND, malformed id → INVALID_ARGUMENT", async () => {
    const authorization = `Bearer ${secret}`;
    expect((await watchTeam(transport(), randomUUID(), { authorization }))?.code).toBe(Code.NotFound);
    expect((await watchTeam(transport(), "not-a-uuid", { authorization }))?.code).toBe(Code.InvalidArgument);
  });
});

describe("CORS for ROZ_CORS_ORIGINS", () => {
  const path = "/roz.v1.AgentService/WatchTeam";

  it("a preflight from an allowed origin allows POST with the gRPC-Web and Connect request headers, and roz-event-format", async () => {
    const response = await fetch(`${server.url}${path}`, {
      method: "OPTIONS",
      headers: {
        origin: ORIGIN,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,x-grpc-web,x-user-agent,authorization,connect-protocol-version,grpc-timeout,roz-event-format",
      },
    });
    expect(response.status).toBeLessThan(300);
    expect(response.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(headerList(response.headers.get("access-control-allow-methods"))).toContain("post");
    expect(headerList(response.headers.get("access-control-allow-headers"))).toEqual(
      expect.arrayContaining(["content-type", "x-grpc-web", "x-user-agent", "authorization", "connect-protocol-version", "grpc-timeout", "roz-event-format"]),
    );
  });

  it("a gRPC-Web call from an allowed origin exposes the status headers to the page", async () => {
    const response = await fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { origin: ORIGIN, "content-type": "application/grpc-web+proto", "x-grpc-web": "1", authorization: `Bearer ${secret}` },
      // One empty message frame: task_id "" (malformed).
      body: new Uint8Array([0, 0, 0, 0, 0]),
    });
    await response.arrayBuffer();
    expect(response.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(headerList(response.headers.get("access-control-expose-headers"))).toEqual(
      expect.arrayContaining(["grpc-status", "grpc-message", "grpc-status-details-bin"]),
    );
  });

  it("another origin is not allowed", async () => {
    const response = await fetch(`${server.url}${path}`, {
      method: "OPTIONS",
      headers: { origin: "http://evil.example", "access-control-request-method": "POST" },
    });
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
  });
});
