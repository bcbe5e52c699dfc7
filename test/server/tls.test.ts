// TLS on the one port: ALPN picks h2 or http/1.1 for REST, gRPC and Connect alike.
import { randomUUID } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../../src/gen/roz/v1/agent_pb.js";
import { createGrpcJsClient, req, type RozGrpcJsClient } from "../support/grpc-js-client.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { createSelfSignedCert, type TestCertificate } from "../support/tls.ts";
import { curl } from "./curl.ts";

let cert: TestCertificate;
let server: TestServer;
let client: RozGrpcJsClient;
beforeAll(async () => {
  cert = await createSelfSignedCert();
  server = await startServer({ ROZ_TLS_CERT: cert.certPath, ROZ_TLS_KEY: cert.keyPath, ROZ_KEEPALIVE_INTERVAL_MS: "3600000" });
  client = createGrpcJsClient(server.url, { rootCert: cert.cert });
});
afterAll(async () => {
  client?.close();
  await server?.close();
  await cert?.cleanup();
});

describe("TLS with ALPN", () => {
  it("serves https URLs", () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it("answers REST over HTTP/1.1 (curl -k --http1.1)", async () => {
    const r = await curl(`${server.url}/healthz`, "1.1", { insecure: true });
    expect(r.httpVersion).toBe("1.1");
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ status: "ok" });
  });

  it("answers REST over HTTP/2 chosen by ALPN (curl -k --http2)", async () => {
    const r = await curl(`${server.url}/healthz`, "h2", { insecure: true });
    expect(r.httpVersion).toBe("2");
    expect(r.status).toBe(200);
    const notFound = await curl(`${server.url}/nope`, "h2", { insecure: true });
    expect(notFound.status).toBe(404);
    expect((JSON.parse(notFound.body) as { error: { code: string } }).error.code).toBe("route_not_found");
  });

  it("runs a StreamSession for grpc-js with the certificate as its root", async () => {
    const call = client.openSession();
    try {
      call.send(req.ping());
      expect((await call.next()).response).toBe("pong");
      call.send(req.start());
      const started = await call.next();
      expect(started.response).toBe("session_started");
      expect((started["session_started"] as { model: string }).model).toBe("scripted/default");
      call.end();
      expect((await call.status).code).toBe(grpc.status.OK);
    } finally {
      call.cancel();
    }
  });

  it("serves Connect over HTTP/1.1 inside TLS", async () => {
    const transport = createConnectTransport({ httpVersion: "1.1", baseUrl: server.url, nodeOptions: { ca: cert.cert } });
    const watch = createClient(AgentService, transport).watchTeam({ taskId: randomUUID() });
    const error = await (async () => {
      try {
        for await (const event of watch) void event;
      } catch (err) {
        return ConnectError.from(err);
      }
      return undefined;
    })();
    expect(error?.code).toBe(Code.NotFound);
  });

  it("does not serve cleartext on the TLS port", async () => {
    const plain = server.url.replace("https:", "http:");
    await expect(curl(`${plain}/healthz`, "1.1", { timeoutMs: 5_000 }).then((r) => r.status)).rejects.toThrow();
  });
});
