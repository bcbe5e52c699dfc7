// The server log a person reads (the real process at level info): no line per successful
// request, but the failed ones; the end of open mode; each session's start and end and how
// its approvals were decided.
import { afterAll, beforeAll, expect, it } from "vitest";
import { type SpawnedServer, spawnServer } from "../support/server.ts";
import { sessionClientFactory } from "../support/session-client.ts";
import { nextApprovalQuestion, nextOf, readTurn, rq, startSession, tool } from "../support/session-protocol.ts";
import { request } from "../rest/support.ts";

let roz: SpawnedServer;

beforeAll(async () => {
  roz = await spawnServer({ ROZ_AUTH: "required" });
});
afterAll(async () => {
  await roz?.dispose();
});

const lines = (msg: string) => roz.logLines().filter((l) => l["msg"] === msg);

it("logs failed requests, the end of open mode, and the life of a session with its approval decision, all at info", async () => {
  // Open mode (loopback, no key yet): these succeed and leave no request line at info.
  for (let i = 0; i < 3; i++) expect((await request(roz.url, "GET", "/v1/sessions")).status).toBe(200);
  const env = await request(roz.url, "POST", "/v1/environments", {
    body: { name: "arm-lab", permissions: [{ tool_pattern: "arm__*", policy: "require_confirmation", reason: "moves hardware" }] },
  });
  expect(env.status).toBe(201);
  const created = await request(roz.url, "POST", "/v1/auth/keys", { body: { name: "first" } });
  expect(created.status).toBe(201);
  expect((await request(roz.url, "GET", "/v1/sessions")).status).toBe(401);

  const factory = sessionClientFactory("connect", roz.url);
  const client = factory.open({ authorization: `Bearer ${created.json.key}` });
  const started = await startSession(client, { environmentId: env.json.id, tools: [tool("arm__move")] });
  const script = {
    responses: [[{ tool_call: { id: "call_1", name: "arm__move", arguments: { x: 1 } } }], { ok: [{ text: "Moved." }], failed: [{ text: "Not moved." }] }],
  };
  client.send(rq.user(`script: ${JSON.stringify(script)}`));
  await nextApprovalQuestion(client);
  client.send(rq.decision("call_1", true));
  await nextOf(client, "toolRequest");
  client.send(rq.toolResult("call_1", "moved to x=1"));
  await readTurn(client);
  client.end();
  await client.status;
  factory.close();

  const sessionId = started.sessionId;
  await expect.poll(() => lines("session ended").length, { timeout: 10_000 }).toBe(1);
  const info = (msg: string) => {
    const [line] = lines(msg);
    expect(line, msg).toBeDefined();
    expect(line?.["level"], msg).toBe(30);
    return line;
  };
  expect(info("session started")).toMatchObject({ sessionId, model: "scripted/default" });
  expect(info("approval decided")).toMatchObject({ sessionId, toolCallId: "call_1", toolName: "arm__move", approved: true });
  expect(info("session ended")).toMatchObject({ sessionId, status: "completed", turns: 1 });
  expect(info("an API key exists: open mode ended, every request now needs a key")).toBeDefined();
  expect(lines("an API key exists: open mode ended, every request now needs a key")).toHaveLength(1);

  // Request lines: only the refused one (401), none of the successful REST calls or the stream.
  const requests = lines("request completed");
  expect(requests.map((l) => (l["res"] as { statusCode: number }).statusCode)).toEqual([401]);
  expect(lines("incoming request")).toEqual([]);
});
