// The console's files on the one port: strict CSP, caching by name, and every other path
// (REST, health, metrics, OpenAPI, RPC, reflection) answering as before.
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildConsole } from "../../web/build.ts";
import { createReflectionClient } from "../reflection/grpc-reflection-client.ts";
import { curl, type CurlHttp } from "../server/curl.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { rpcClient } from "./support/console.ts";

let dir: string;
let server: TestServer;
let assets: { script: string; style: string };
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "roz-console-"));
  assets = await buildConsole(dir);
  server = await startServer({ ROZ_CONSOLE_DIR: dir });
});
afterAll(async () => {
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.each<CurlHttp>(["1.1", "h2c"])("the console over %s", (http) => {
  it("GET / is index.html, revalidated on every load, under a strict Content-Security-Policy", async () => {
    const res = await curl(`${server.url}/`, http);
    expect(res.status).toBe(200);
    expect(res.contentType).toMatch(/^text\/html/);
    expect(res.headers["cache-control"]).toBe("no-cache");
    const csp = res.headers["content-security-policy"] ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    // Nothing inline: the page only references its own hashed files.
    expect(res.body).toContain(`src="/${assets.script}"`);
    expect(res.body).toContain(`href="/${assets.style}"`);
    expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(res.body).not.toMatch(/\sstyle=/);
  });

  it("hashed assets are cacheable forever", async () => {
    for (const path of [assets.script, assets.style]) {
      const res = await curl(`${server.url}/${path}`, http);
      expect(res.status).toBe(200);
      expect(res.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
      expect(res.headers["content-security-policy"]).toBeDefined();
    }
    expect(await readdir(join(dir, "assets"))).toHaveLength(2);
  });

  it("REST, health, metrics and OpenAPI keep their answers; unknown paths keep the JSON 404", async () => {
    expect((await curl(`${server.url}/healthz`, http)).status).toBe(200);
    expect((await curl(`${server.url}/metrics`, http)).body).toContain("# TYPE");
    const openapi = JSON.parse((await curl(`${server.url}/openapi.json`, http)).body) as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths)).toContain("/v1/sessions");
    expect(Object.keys(openapi.paths).some((p) => p.includes("assets"))).toBe(false);
    const list = await curl(`${server.url}/v1/sessions`, http);
    expect(list.status).toBe(200);
    expect(JSON.parse(list.body)).toEqual({ items: [] });
    const missing = await curl(`${server.url}/v1/no-such-route`, http);
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body)).toMatchObject({ error: { code: "route_not_found" } });
    const nope = await curl(`${server.url}/assets/nope.js`, http);
    expect(nope.status).toBe(404);
    expect(JSON.parse(nope.body)).toMatchObject({ error: { code: "route_not_found" } });
  });
});

it("RPC paths still reach AgentService, and reflection still answers", async () => {
  const client = rpcClient(server);
  const err = await (async () => {
    for await (const _ of client.watchTeam({ taskId: crypto.randomUUID() })) break;
  })().catch((e: unknown) => ConnectError.from(e));
  expect(err).toBeInstanceOf(ConnectError);
  expect((err as ConnectError).code).toBe(Code.NotFound);

  const reflection = createReflectionClient(server.port, "v1");
  const stream = reflection.open();
  try {
    const answer = await stream.ask({ list_services: "" });
    expect(JSON.stringify(answer)).toContain("roz.v1.AgentService");
  } finally {
    stream.close();
    reflection.close();
  }
});

it("ROZ_CONSOLE_DIR=off serves no console: / is the JSON 404", async () => {
  const off = await startServer({ ROZ_CONSOLE_DIR: "off" });
  try {
    const res = await curl(`${off.url}/`, "1.1");
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: "route_not_found" } });
  } finally {
    await off.close();
  }
});
