// WatchTeam from a real browser: Chromium (playwright-core, Debian's /usr/bin/chromium) runs
// @connectrpc/connect-web's transports from a page on another origin (CORS), over HTTP/1.1.
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join, normalize } from "node:path";
import type { Browser } from "playwright-core";
import { haveChromium, launchChromium } from "../support/chromium.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot, startServer, type TestServer } from "../support/server.ts";
import { client } from "../rest/support.ts";
import { says, settledTask } from "./support.ts";

/** The page's import map: bare specifiers of connect-web, connect and protobuf to their ESM builds. */
const imports = {
  "@connectrpc/connect": "/nm/@connectrpc/connect/dist/esm/index.js",
  "@connectrpc/connect/protocol": "/nm/@connectrpc/connect/dist/esm/protocol/index.js",
  "@connectrpc/connect/protocol-connect": "/nm/@connectrpc/connect/dist/esm/protocol-connect/index.js",
  "@connectrpc/connect/protocol-grpc-web": "/nm/@connectrpc/connect/dist/esm/protocol-grpc-web/index.js",
  "@connectrpc/connect-web": "/nm/@connectrpc/connect-web/dist/esm/index.js",
  "@bufbuild/protobuf": "/nm/@bufbuild/protobuf/dist/esm/index.js",
  "@bufbuild/protobuf/codegenv2": "/nm/@bufbuild/protobuf/dist/esm/codegenv2/index.js",
  "@bufbuild/protobuf/wire": "/nm/@bufbuild/protobuf/dist/esm/wire/index.js",
  "@bufbuild/protobuf/wkt": "/nm/@bufbuild/protobuf/dist/esm/wkt/index.js",
};

const page = `<!doctype html><html><head><script type="importmap">${JSON.stringify({ imports })}</script>
<script type="module">
import { createClient, ConnectError } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { AgentService } from "/gen/roz/v1/agent_pb.js";
window.watchTeam = async (baseUrl, kind, taskId) => {
  const transport = (kind === "connect" ? createConnectTransport : createGrpcWebTransport)({ baseUrl });
  const events = [];
  try {
    for await (const e of createClient(AgentService, transport).watchTeam({ taskId })) events.push({ seq: Number(e.seq), kind: e.event.case });
    return { events, code: "ok" };
  } catch (err) {
    return { events, code: ConnectError.from(err).code };
  }
};
window.ready = true;
</script></head><body>roz WatchTeam</body></html>`;

const types: Record<string, string> = { ".js": "text/javascript", ".html": "text/html" };

/** Serves the page, node_modules under /nm and src/gen under /gen. */
function startStatic(): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (path === "/") {
      res.writeHead(200, { "content-type": "text/html" }).end(page);
      return;
    }
    const root = path.startsWith("/nm/") ? join(repoRoot, "node_modules") : path.startsWith("/gen/") ? join(repoRoot, "src/gen") : undefined;
    const rel = normalize(path.replace(/^\/(nm|gen)\//, ""));
    if (!root || rel.startsWith("..")) return void res.writeHead(404).end();
    readFile(join(root, rel)).then(
      (body) => res.writeHead(200, { "content-type": types[extname(rel)] ?? "application/octet-stream" }).end(body),
      () => res.writeHead(404).end(),
    );
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })),
  );
}

describe.skipIf(!haveChromium)("WatchTeam in Chromium with Connect-Web", () => {
  let roz: TestServer;
  let statics: { server: Server; origin: string };
  let browser: Browser;
  let taskId: string;
  beforeAll(async () => {
    statics = await startStatic();
    roz = await startServer({ ROZ_CORS_ORIGINS: statics.origin });
    const api = client(roz);
    taskId = (await api.post("/v1/tasks", { body: { prompt: says("from the browser's task") } })).json.id;
    await settledTask(api.get, taskId);
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await roz?.close();
    statics?.server.close();
  });

  it.each(["connect", "grpc-web"])(
    "the %s transport streams the whole log and ends OK; a malformed id is INVALID_ARGUMENT",
    async (kind) => {
      const tab = await browser.newPage();
      await tab.goto(statics.origin);
      await tab.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
      const run = (id: string) =>
        tab.evaluate(
          ([url, k, t]) => (window as unknown as { watchTeam: (u: string, k: string, t: string) => Promise<unknown> }).watchTeam(url!, k!, t!),
          [roz.url, kind, id],
        );
      const ok = (await run(taskId)) as { events: { seq: number; kind: string }[]; code: string };
      expect(ok.code).toBe("ok");
      expect(ok.events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
      expect(ok.events.map((e) => e.kind)).toEqual(["workerStarted", "workerPhase", "workerCompleted", "workerExited"]);
      const bad = (await run("not-a-uuid")) as { code: unknown };
      // Connect's Code.InvalidArgument is 3.
      expect(bad.code).toBe(3);
      await tab.close();
    },
    60_000,
  );
});
