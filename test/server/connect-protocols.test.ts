// Connect, gRPC and gRPC-Web clients from @connectrpc/connect-node against the one port.
import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../../src/gen/roz/v1/agent_pb.js";
import { startServer, type TestServer } from "../support/server.ts";
import { openConnectSession } from "./connect-session.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ ROZ_KEEPALIVE_INTERVAL_MS: "3600000" });
});
afterAll(async () => {
  await server?.close();
});

/** Runs WatchTeam to its end and returns the error it ended with (undefined = OK). */
async function watchTeamError(transport: Transport, taskId: string): Promise<ConnectError | undefined> {
  const client = createClient(AgentService, transport);
  try {
    for await (const event of client.watchTeam({ taskId }, { timeoutMs: 10_000 })) void event;
    return undefined;
  } catch (err) {
    return ConnectError.from(err);
  }
}

const unaryTransports: [string, () => Transport][] = [
  ["Connect over HTTP/1.1", () => createConnectTransport({ httpVersion: "1.1", baseUrl: server.url })],
  ["Connect (JSON) over HTTP/1.1", () => createConnectTransport({ httpVersion: "1.1", baseUrl: server.url, useBinaryFormat: false })],
  ["gRPC-Web over HTTP/1.1", () => createGrpcWebTransport({ httpVersion: "1.1", baseUrl: server.url })],
  ["gRPC-Web over HTTP/2", () => createGrpcWebTransport({ httpVersion: "2", baseUrl: server.url })],
  ["gRPC over HTTP/2", () => createGrpcTransport({ baseUrl: server.url })],
];

describe.each(unaryTransports)("WatchTeam with %s", (_name, transport) => {
  it("an unknown task id is NOT_FOUND", async () => {
    const error = await watchTeamError(transport(), randomUUID());
    expect(error?.code).toBe(Code.NotFound);
  });

  it("a task id that is not a UUID is INVALID_ARGUMENT", async () => {
    const error = await watchTeamError(transport(), "not-a-uuid");
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(error?.rawMessage).toContain("not-a-uuid");
  });
});

const bidiTransports: [string, () => Transport][] = [
  ["gRPC over HTTP/2", () => createGrpcTransport({ baseUrl: server.url })],
  ["Connect over HTTP/2", () => createConnectTransport({ httpVersion: "2", baseUrl: server.url })],
];

describe.each(bidiTransports)("StreamSession with %s", (_name, transport) => {
  it("ping → pong, start → session_started, half-close → OK", async () => {
    const session = openConnectSession(transport());
    session.send({ request: { case: "ping", value: {} } });
    const pong = await session.next();
    expect(pong.response.case).toBe("pong");
    expect(pong.seq).toBe(0n);

    session.send({ request: { case: "start", value: { environmentId: "" } } });
    const started = await session.next();
    expect(started.seq).toBe(1n);
    if (started.response.case !== "sessionStarted") throw new Error(`expected sessionStarted, got ${started.response.case}`);
    expect(started.response.value.sessionId).toMatch(UUID);
    expect(started.response.value.model).toBe("scripted/default");

    session.send({ request: { case: "start", value: {} } });
    const again = await session.next();
    expect(again.seq).toBe(2n);
    expect(again.response.case === "error" && again.response.value.code).toBe("already_started");
    session.end();
    expect(await session.done).toBeUndefined();
  });

  it("cancel_session ends the call with OK", async () => {
    const session = openConnectSession(transport());
    session.send({ request: { case: "start", value: {} } });
    expect((await session.next()).response.case).toBe("sessionStarted");
    session.send({ request: { case: "cancelSession", value: { reason: "bye" } } });
    expect(await session.done).toBeUndefined();
  });
});
