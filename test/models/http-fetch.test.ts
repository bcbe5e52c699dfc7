// The fetch the provider SDKs get (node:http with keep-alive), against a real local HTTP
// server: requests as sent, replies as the built-in fetch gives them, streamed replies read
// from the Node stream by our SSE reader, and failures classified as before.
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as zlib from "node:zlib";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toModelError } from "../../src/models/classify-error.ts";
import { httpFetch, takeNodeBody } from "../../src/models/http-fetch.ts";
import { readSseJson } from "../../src/models/sse.ts";

type Route = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

const routes = new Map<string, Route>();
const remotePorts: number[] = [];
let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer(async (req, res) => {
    remotePorts.push(req.socket.remotePort ?? 0);
    let body = "";
    for await (const chunk of req) body += chunk;
    const route = routes.get(new URL(req.url ?? "/", "http://x").pathname);
    if (route) route(req, res, body);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const sse = (res: http.ServerResponse): void => {
  res.writeHead(200, { "content-type": "text/event-stream" });
};
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reads a streamed reply with our SSE reader; the payloads, or the error it failed with. */
async function readAll(response: Response, controller = new AbortController()): Promise<{ payloads: unknown[]; error?: unknown }> {
  const payloads: unknown[] = [];
  try {
    await readSseJson(response, controller, controller.signal, (data) => payloads.push(data));
    return { payloads };
  } catch (error) {
    return { payloads, error };
  }
}

describe("httpFetch", () => {
  it("sends the method, headers and body, and gives status, headers and body back; the connection is reused", async () => {
    routes.set("/echo", (req, res, body) => {
      res.writeHead(201, { "content-type": "application/json", "x-request-id": "req_1", "set-cookie": ["a=1", "b=2"] });
      res.end(JSON.stringify({ method: req.method, auth: req.headers.authorization, body: JSON.parse(body) }));
    });
    const before = remotePorts.length;
    for (let i = 0; i < 2; i++) {
      const response = await httpFetch(`${base}/echo`, {
        method: "POST",
        headers: { authorization: "Bearer k", "content-type": "application/json" },
        body: JSON.stringify({ n: i }),
      });
      expect(response.status).toBe(201);
      expect(response.ok).toBe(true);
      expect(response.headers.get("x-request-id")).toBe("req_1");
      expect(response.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
      expect(await response.json()).toEqual({ method: "POST", auth: "Bearer k", body: { n: i } });
    }
    const ports = remotePorts.slice(before);
    expect(ports[0]).toBe(ports[1]);
  });

  it("gives an error reply's status, headers and body, as the SDKs read them", async () => {
    routes.set("/limited", (_req, res) => {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "7" });
      res.end(JSON.stringify({ error: { message: "slow down", type: "rate_limit" } }));
    });
    const response = await httpFetch(`${base}/limited`, { method: "POST", body: "{}" });
    expect(response.status).toBe(429);
    expect(response.ok).toBe(false);
    expect(response.headers.get("retry-after")).toBe("7");
    expect(await response.json()).toEqual({ error: { message: "slow down", type: "rate_limit" } });
  });

  it("decompresses a gzip reply and a gzip stream", async () => {
    routes.set("/gzip-json", (_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
      res.end(zlib.gzipSync(JSON.stringify({ ok: true })));
    });
    routes.set("/gzip-sse", (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "gzip" });
      res.end(zlib.gzipSync('data: {"a":1}\n\ndata: [DONE]\n\n'));
    });
    expect(await (await httpFetch(`${base}/gzip-json`)).json()).toEqual({ ok: true });
    expect(await readAll(await httpFetch(`${base}/gzip-sse`))).toEqual({ payloads: [{ a: 1 }] });
  });

  it("a streamed reply is read from its Node stream, in order, however it is cut and paced", async () => {
    routes.set("/stream", async (_req, res) => {
      sse(res);
      const text = `${Array.from({ length: 50 }, (_, i) => `data: {"i":${i},"t":"héllo ✓"}\n\n`).join("")}data: [DONE]\n\n`;
      const bytes = Buffer.from(text);
      for (let at = 0; at < bytes.length; at += 37) {
        res.write(bytes.subarray(at, at + 37));
        if (at % 5 === 0) await pause(1);
      }
      res.end();
    });
    const response = await httpFetch(`${base}/stream`);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const { payloads, error } = await readAll(response);
    expect(error).toBeUndefined();
    expect(payloads).toEqual(Array.from({ length: 50 }, (_, i) => ({ i, t: "héllo ✓" })));
    // The Node stream was taken: the web body can no longer be.
    expect(takeNodeBody(response)).toBeUndefined();
    await expect(response.text()).rejects.toThrow();
  });

  it("a streamed reply's Node stream waits to be taken: making the Response reads nothing ahead", async () => {
    routes.set("/stream-node", (_req, res) => {
      sse(res);
      res.end('data: {"a":1}\n\n');
    });
    const response = await httpFetch(`${base}/stream-node`);
    await pause(20);
    const stream = takeNodeBody(response);
    expect(stream).toBeDefined();
    let text = "";
    for await (const chunk of stream as AsyncIterable<Buffer>) text += chunk;
    expect(text).toBe('data: {"a":1}\n\n');
  });

  it("after [DONE] the connection goes back to the pool: the next call reuses it", async () => {
    routes.set("/done", (_req, res) => {
      sse(res);
      res.write('data: {"a":1}\n\n');
      res.end("data: [DONE]\n\n");
    });
    const before = remotePorts.length;
    for (let i = 0; i < 3; i++) expect(await readAll(await httpFetch(`${base}/done`))).toEqual({ payloads: [{ a: 1 }] });
    const ports = remotePorts.slice(before);
    expect(new Set(ports).size).toBe(1);
  });

  it("a server that goes on sending after [DONE] is cut within about a second", async () => {
    let serverSawClose!: () => void;
    const closed = new Promise<void>((resolve) => (serverSawClose = resolve));
    routes.set("/after-done", (_req, res) => {
      sse(res);
      res.write('data: {"a":1}\n\ndata: [DONE]\n\n');
      const timer = setInterval(() => res.write('data: {"late":1}\n\n'), 10);
      res.on("close", () => {
        clearInterval(timer);
        serverSawClose();
      });
    });
    const started = performance.now();
    expect(await readAll(await httpFetch(`${base}/after-done`))).toEqual({ payloads: [{ a: 1 }] });
    expect(performance.now() - started).toBeLessThan(500);
    await closed;
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it("a streamed reply can still be read as a web body when no one took its Node stream", async () => {
    routes.set("/stream-text", (_req, res) => {
      sse(res);
      res.end('data: {"a":1}\n\n');
    });
    const response = await httpFetch(`${base}/stream-text`);
    expect(await response.text()).toBe('data: {"a":1}\n\n');
    expect(takeNodeBody(response)).toBeUndefined();
  });

  it("an abort ends the reading quietly and closes the connection", async () => {
    let serverSawClose!: () => void;
    const closed = new Promise<void>((resolve) => (serverSawClose = resolve));
    routes.set("/endless", (_req, res) => {
      sse(res);
      const timer = setInterval(() => res.write('data: {"tick":1}\n\n'), 5);
      res.on("close", () => {
        clearInterval(timer);
        serverSawClose();
      });
    });
    const controller = new AbortController();
    const response = await httpFetch(`${base}/endless`, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    const { payloads, error } = await readAll(response, controller);
    expect(error).toBeUndefined();
    expect(payloads.length).toBeGreaterThan(0);
    await closed;
  });

  it("a stream cut by the server fails as the built-in fetch's does, a retryable lost connection", async () => {
    routes.set("/cut", (_req, res) => {
      sse(res);
      res.write('data: {"a":1}\n\n');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const { payloads, error } = await readAll(await httpFetch(`${base}/cut`));
    expect(payloads).toEqual([{ a: 1 }]);
    expect(error).toBeInstanceOf(TypeError);
    expect(toModelError(error)).toMatchObject({ retryable: true, message: "the connection to the model provider was lost" });
  });

  it("a reply whose connection died before it was read fails as a lost connection, plain or gzip, and throws nothing at the process", async () => {
    routes.set("/died", (req, res) => {
      const gzip = req.headers["x-gzip"] === "1";
      res.writeHead(200, { "content-type": "text/event-stream", ...(gzip ? { "content-encoding": "gzip" } : {}) });
      const whole = 'data: {"a":1}\n\n'.repeat(200);
      res.write(gzip ? zlib.gzipSync(whole).subarray(0, 40) : whole.slice(0, 40));
      setTimeout(() => res.socket?.destroy(), 10);
    });
    for (const gzip of ["0", "1"]) {
      const response = await httpFetch(`${base}/died`, { headers: { "x-gzip": gzip } });
      await pause(100);
      const { error } = await readAll(response);
      expect(error).toBeInstanceOf(TypeError);
      expect(toModelError(error)).toMatchObject({ retryable: true, message: "the connection to the model provider was lost" });
    }
  });

  it("an abort while an error reply downloads fails with the signal's AbortError", async () => {
    routes.set("/slow-error", (_req, res) => {
      res.writeHead(500, { "content-type": "application/json" });
      res.write('{"error":');
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const error = await httpFetch(`${base}/slow-error`, { signal: controller.signal }).catch((err: unknown) => err);
    expect((error as Error).name).toBe("AbortError");
    expect(error).toBe(controller.signal.reason);
  });

  it("any successful reply's Node stream can be taken, whatever its content type", async () => {
    routes.set("/mislabelled", (_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end('data: {"a":1}\n\ndata: [DONE]\n\n');
    });
    const stream = takeNodeBody(await httpFetch(`${base}/mislabelled`));
    expect(stream).toBeDefined();
    let text = "";
    for await (const chunk of stream as AsyncIterable<Buffer>) text += chunk;
    expect(text).toBe('data: {"a":1}\n\ndata: [DONE]\n\n');
  });

  it("an idle pooled connection is closed as the server's Keep-Alive hint says", async () => {
    let serverSawClose!: () => void;
    const closed = new Promise<void>((resolve) => (serverSawClose = resolve));
    routes.set("/hint", (req, res) => {
      req.socket.once("close", () => serverSawClose());
      res.writeHead(200, { "content-type": "application/json", "keep-alive": "timeout=2" }).end("{}");
    });
    expect(await (await httpFetch(`${base}/hint`)).json()).toEqual({});
    const idleSince = performance.now();
    await closed;
    // The test server itself would close it after 5 s.
    expect(performance.now() - idleSince).toBeLessThan(3000);
  });

  it("keeps the length of a reply that was not compressed; a 205 has no body", async () => {
    routes.set("/plain", (_req, res) => res.writeHead(200, { "content-type": "application/json", "content-length": "2" }).end("{}"));
    routes.set("/reset-content", (_req, res) => res.writeHead(205).end());
    const plain = await httpFetch(`${base}/plain`);
    expect(plain.headers.get("content-length")).toBe("2");
    expect(await plain.json()).toEqual({});
    const reset = await httpFetch(`${base}/reset-content`);
    expect(reset.status).toBe(205);
    expect(reset.body).toBeNull();
  });

  it("a refused connection fails with TypeError('fetch failed'), a retryable network error", async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const probe = http.createServer();
      probe.listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const error = await httpFetch(`http://127.0.0.1:${closedPort}/`).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toBe("fetch failed");
    expect(toModelError(error).retryable).toBe(true);
  });

  it("follows a redirect, as the built-in fetch does", async () => {
    routes.set("/old", (_req, res) => res.writeHead(307, { location: "/echo" }).end());
    const response = await httpFetch(`${base}/old`, { method: "POST", body: JSON.stringify({ n: 9 }) });
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ method: "POST", body: { n: 9 } });
  });

  it("hands every request to the built-in fetch while Node's proxy support is on", async () => {
    routes.set("/proxied", (_req, res) => {
      sse(res);
      res.end('data: {"a":1}\n\n');
    });
    process.env.NODE_USE_ENV_PROXY = "1";
    try {
      const response = await httpFetch(`${base}/proxied`);
      expect(takeNodeBody(response)).toBeUndefined();
      expect(await response.text()).toBe('data: {"a":1}\n\n');
    } finally {
      delete process.env.NODE_USE_ENV_PROXY;
    }
  });

  it("serves the openai SDK: a streamed chat completion and an error status", async () => {
    routes.set("/v1/chat/completions", (_req, res, body) => {
      if (JSON.parse(body).model === "missing") {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "no such model", type: "invalid_request_error" } }));
        return;
      }
      sse(res);
      res.end(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "hi" }, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`);
    });
    const client = new OpenAI({ apiKey: "k", baseURL: `${base}/v1`, fetch: httpFetch, maxRetries: 0 });
    const controller = new AbortController();
    const response = await client.chat.completions.create({ model: "m", messages: [], stream: true }, { signal: controller.signal }).asResponse();
    expect(await readAll(response, controller)).toEqual({ payloads: [{ choices: [{ index: 0, delta: { content: "hi" }, finish_reason: "stop" }] }] });
    const failed = await client.chat.completions.create({ model: "missing", messages: [] }).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(OpenAI.APIError);
    expect((failed as InstanceType<typeof OpenAI.APIError>).status).toBe(404);
    expect(toModelError(failed)).toMatchObject({ retryable: false, status: 404 });
  });
});
