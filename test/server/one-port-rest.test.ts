// REST on the one port: the same socket answers curl over HTTP/1.1 and over h2c prior knowledge.
import * as net from "node:net";
import { Ajv } from "ajv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../support/server.ts";
import { curl, type CurlHttp } from "./curl.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server?.close();
});

/** The parts of an OpenAPI 3.x document every consumer relies on. */
const openapiShape = {
  type: "object",
  required: ["openapi", "info", "paths"],
  properties: {
    openapi: { type: "string", pattern: "^3\\.\\d+\\.\\d+$" },
    info: {
      type: "object",
      required: ["title", "version"],
      properties: { title: { type: "string", minLength: 1 }, version: { type: "string", minLength: 1 } },
    },
    paths: {
      type: "object",
      patternProperties: {
        "^/": {
          type: "object",
          // OpenAPI 3.1 path items: these fields only (`query` is 3.2).
          propertyNames: {
            enum: ["$ref", "summary", "description", "servers", "parameters", "get", "put", "post", "delete", "options", "head", "patch", "trace"],
          },
          patternProperties: {
            "^(get|put|post|delete|patch|head|options|trace)$": {
              type: "object",
              required: ["responses"],
              properties: { responses: { type: "object", minProperties: 1, propertyNames: { pattern: "^([1-5]\\d\\d|[1-5]XX|default)$" } } },
            },
          },
        },
      },
      additionalProperties: false,
    },
  },
} as const;

const versionFor: Record<Exclude<CurlHttp, "h2">, string> = { "1.1": "1.1", h2c: "2" };

describe.each(["1.1", "h2c"] as const)("REST over %s on the one port", (http) => {
  const get = async (path: string, options?: Parameters<typeof curl>[2]) => {
    const result = await curl(`${server.url}${path}`, http, options);
    expect(result.httpVersion).toBe(versionFor[http]);
    return result;
  };

  it("GET /healthz answers ok", async () => {
    const r = await get("/healthz");
    expect(r.status).toBe(200);
    expect(r.contentType).toMatch(/^application\/json/);
    expect(JSON.parse(r.body)).toEqual({ status: "ok" });
  });

  it("GET /readyz is ready", async () => {
    const r = await get("/readyz");
    expect(r.status).toBe(200);
    const body = JSON.parse(r.body) as { status: string; checks: { name: string; ok: boolean }[] };
    expect(body.status).toBe("ready");
    expect(body.checks.every((c) => c.ok)).toBe(true);
  });

  it("GET /v1/version names the server, the API and the protocols", async () => {
    const r = await get("/v1/version");
    expect(r.status).toBe(200);
    const body = JSON.parse(r.body) as Record<string, unknown>;
    expect(body).toMatchObject({ name: "roz", api: "roz.v1", default_model: "scripted/default" });
    expect(body["version"]).toMatch(/^\d+\.\d+\.\d+/);
    expect(body["protocols"]).toEqual(expect.arrayContaining(["grpc", "grpc-web", "connect", "rest"]));
  });

  it("GET /openapi.json is an OpenAPI document listing the REST paths", async () => {
    const r = await get("/openapi.json");
    expect(r.status).toBe(200);
    const doc = JSON.parse(r.body) as { paths: Record<string, Record<string, unknown>> };
    const validate = new Ajv({ strict: false }).compile(openapiShape);
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
    for (const path of ["/healthz", "/readyz", "/v1/version"]) expect(doc.paths[path]?.["get"], path).toBeDefined();
  });

  it("GET /openapi.json describes REST only, not the RPC paths", async () => {
    const doc = JSON.parse((await get("/openapi.json")).body) as { paths: Record<string, unknown> };
    const rpcPaths = Object.keys(doc.paths).filter((p) => /^\/(roz\.v1|grpc\.reflection)\./.test(p));
    expect(rpcPaths).toEqual([]);
  });

  it("an unknown path is a JSON 404", async () => {
    const r = await get("/no/such/thing?x=1");
    expect(r.status).toBe(404);
    expect(r.contentType).toMatch(/^application\/json/);
    const body = JSON.parse(r.body) as { error: { code: unknown; message: unknown } };
    expect(body.error.code).toBe("route_not_found");
    expect(body.error.message).toEqual(expect.any(String));
    expect(body.error.message).not.toContain("x=1");
  });

  it("a method starting with P (like the HTTP/2 preface) still gets an HTTP answer", async () => {
    const r = await get("/v1/version", { method: "PUT", data: "{}", headers: { "content-type": "application/json" } });
    expect(r.status).toBe(404);
    expect((JSON.parse(r.body) as { error: { code: string } }).error.code).toBe("route_not_found");
  });
});

describe("connection sniffing", () => {
  /**
   * A TCP relay in front of the server that sends the client's first bytes in two
   * segments with a pause in between, so the server sees a split HTTP/2 preface.
   */
  async function splittingProxy(targetPort: number, splitAt: number): Promise<{ port: number; close(): Promise<void> }> {
    const sockets = new Set<net.Socket>();
    const proxy = net.createServer((client) => {
      const upstream = net.connect(targetPort, "127.0.0.1");
      sockets.add(client).add(upstream);
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
      client.once("data", (first: Buffer) => {
        client.pause();
        upstream.write(first.subarray(0, splitAt));
        setTimeout(() => {
          upstream.write(first.subarray(splitAt));
          client.pipe(upstream);
          client.resume();
        }, 100);
      });
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    return {
      port: (proxy.address() as net.AddressInfo).port,
      close: () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy();
          proxy.close(() => resolve());
        }),
    };
  }

  it.each([3, 23])("recognises an HTTP/2 preface split after %i bytes", async (splitAt) => {
    const proxy = await splittingProxy(server.port, splitAt);
    try {
      const r = await curl(`http://127.0.0.1:${proxy.port}/healthz`, "h2c");
      expect(r.httpVersion).toBe("2");
      expect(r.status).toBe(200);
    } finally {
      await proxy.close();
    }
  });

  it("survives a client that connects and resets before sending anything", async () => {
    await new Promise<void>((resolve) => {
      const socket = net.connect(server.port, "127.0.0.1", () => {
        socket.resetAndDestroy();
        resolve();
      });
    });
    const r = await curl(`${server.url}/healthz`, "1.1");
    expect(r.status).toBe(200);
  });
});
