// Every error answer has the body {"error":{"code","message"}}: also the router's 414 (long
// ids) and 400 (bad percent-encoding), and the HTTP/1.1 parser's 431 and 400, which Node and
// Fastify used to answer in their own shapes or with no body at all.
import * as net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../support/server.ts";
import { curl } from "../server/curl.ts";

/** Sends raw bytes over HTTP/1.1 and resolves with the status and parsed body of the answer. */
function rawRequest(port: number, text: string): Promise<{ status: number; body: any; head: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(text));
    let out = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (out += chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const [head = "", body = ""] = out.split("\r\n\r\n", 2);
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]);
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = body;
      }
      resolve({ status, body: json, head });
    });
  });
}

const get = (path: string, extra = "") => `GET ${path} HTTP/1.1\r\nHost: roz\r\n${extra}Connection: close\r\n\r\n`;
const errorShape = { error: { code: expect.any(String), message: expect.any(String) } };

describe("error bodies", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server?.close());

  it("414 for an over-long id, without echoing it", async () => {
    const reply = await rawRequest(server.port, get(`/v1/sessions/${"a".repeat(5000)}`));
    expect(reply.status).toBe(414);
    expect(reply.body).toMatchObject({ error: { code: "uri_too_long" } });
    expect(JSON.stringify(reply.body).length).toBeLessThan(300);
  });

  it("400 for a URL that is not valid percent-encoding", async () => {
    const reply = await rawRequest(server.port, get("/v1/environments/%ff"));
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ error: { code: "invalid_argument" } });
  });

  it("431 for headers over the limit", async () => {
    const reply = await rawRequest(server.port, get("/healthz", `X-Big: ${"a".repeat(20_000)}\r\n`));
    expect(reply.status).toBe(431);
    expect(reply.body).toMatchObject({ error: { code: "headers_too_large" } });
    expect(reply.head.toLowerCase()).toContain("content-type: application/json");
  });

  it("400 for bytes that are not HTTP", async () => {
    const reply = await rawRequest(server.port, "GARBAGE\r\n\r\n");
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject(errorShape);
  });

  it("400 for an HTTP/1.1 request without a Host header; HTTP/1.0 needs none", async () => {
    for (const path of ["/healthz", "/v1/sessions/%ff"]) {
      const reply = await rawRequest(server.port, `GET ${path} HTTP/1.1\r\n\r\n`);
      expect(reply.status, path).toBe(400);
      expect(reply.body, path).toMatchObject({ error: { code: "invalid_argument", message: expect.stringContaining("Host") } });
      expect(reply.head.toLowerCase()).toContain("content-type: application/json");
    }
    const old = await rawRequest(server.port, "GET /healthz HTTP/1.0\r\n\r\n");
    expect(old.head).toMatch(/^HTTP\/1\.1 200/);
  });

  it("over HTTP/2 too: 414 and 400 in the same shape", async () => {
    for (const [path, status] of [
      [`/v1/sessions/${"b".repeat(300)}`, 414],
      ["/v1/environments/%ff", 400],
    ] as const) {
      const reply = await curl(`${server.url}${path}`, "h2c");
      expect(reply.httpVersion).toBe("2");
      expect(reply.status).toBe(status);
      expect(JSON.parse(reply.body)).toMatchObject(errorShape);
    }
  });
});
