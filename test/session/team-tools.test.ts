// §7 first bullet: the team tools are opt-in. A session's model sees spawn_worker and
// wait_for_workers only when its environment says `teams.enabled`, or ROZ_TEAMS_DEFAULT=on and
// the environment does not say false; otherwise exactly the client's tools. A turn's own
// tools replace only the client's tools. The fake provider records what the model was offered.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI } from "../support/fake-openai/index.ts";
import { startServer } from "../support/server.ts";
import { sessionClientFactory } from "../support/session-client.ts";
import { nextOf, readTurn, rq, startSession, tool } from "../support/session-protocol.ts";
import { offeredNames } from "./chat-body.ts";
import { type SessionFixture, startSessionFixture } from "./fixture.ts";

const TEAM_TOOLS = ["spawn_worker", "wait_for_workers"];

/** The tools the model is offered at the first call of a session started in `environmentId` ("" = the default one). */
async function offered(fx: SessionFixture, environmentId: string, turnTools?: string[]): Promise<string[]> {
  const { client } = await fx.start("grpc-js", { environmentId, tools: [tool("read_file")] });
  fx.fake.plan({ text: "ok" });
  client.send(rq.user("which tools?", turnTools ? { tools: turnTools.map((n) => tool(n)) } : {}));
  await readTurn(client);
  return offeredNames(fx.requests().at(-1)!.body);
}

async function environment(fx: SessionFixture, teams?: unknown): Promise<string> {
  const env = await fx.rest("POST", "/v1/environments", { name: `env-${Date.now()}-${Math.random()}`, ...(teams !== undefined ? { teams } : {}) });
  expect(env.status).toBe(201);
  return env.json.id as string;
}

describe("server default off", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture();
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  it("a session whose environment says nothing offers exactly the client's tools", async () => {
    expect(await offered(fx, "")).toEqual(["read_file"]);
    expect(await offered(fx, await environment(fx))).toEqual(["read_file"]);
  });

  it("an environment with teams.enabled offers the team tools; a turn's own tools replace only the client's", async () => {
    const id = await environment(fx, { enabled: true });
    expect(await offered(fx, id)).toEqual(["read_file", ...TEAM_TOOLS]);
    expect(await offered(fx, id, ["lookup"])).toEqual(["lookup", ...TEAM_TOOLS]);
  });

  it("REST keeps teams.enabled, PATCH null returns it to the default, and a malformed teams is a 400 naming it", async () => {
    const id = await environment(fx, { enabled: true });
    expect((await fx.rest("GET", `/v1/environments/${id}`)).json.teams).toEqual({ enabled: true });
    const cleared = await fx.rest("PATCH", `/v1/environments/${id}`, { teams: null });
    expect(cleared.status).toBe(200);
    expect(cleared.json.teams).toBeUndefined();
    expect((await fx.rest("PATCH", `/v1/environments/${id}`, { teams: { enabled: false } })).json.teams).toEqual({ enabled: false });
    for (const teams of [true, { enabled: "yes" }, { on: true }, {}]) {
      const bad = await fx.rest("POST", "/v1/environments", { name: `bad-${Math.random()}`, teams });
      expect(bad.status, JSON.stringify(teams)).toBe(400);
      expect(bad.json.error.message).toMatch(/teams/);
    }
  });
});

describe("ROZ_TEAMS_DEFAULT=on", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture({ env: { ROZ_TEAMS_DEFAULT: "on" } });
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  it("offers the team tools unless the environment says false", async () => {
    expect(await offered(fx, "")).toEqual(["read_file", ...TEAM_TOOLS]);
    expect(await offered(fx, await environment(fx, { enabled: false }))).toEqual(["read_file"]);
  });
});

describe("after a restart", () => {
  it("a session adopted by the next process keeps the team tools it started with", async () => {
    const fake = await startFakeOpenAI();
    const dataDir = await mkdtemp(join(tmpdir(), "roz-team-tools-"));
    const env = {
      ROZ_DATA_DIR: dataDir,
      OPENAI_API_KEY: "sk-test",
      OPENAI_BASE_URL: fake.baseURL,
      ROZ_OPENAI_API: "chat",
      ROZ_DEFAULT_MODEL: "openai/fake-model",
    };
    try {
      const first = await startServer(env);
      const created = await fetch(`${first.url}/v1/environments`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "team", teams: { enabled: true } }),
      });
      const environmentId = ((await created.json()) as { id: string }).id;
      const one = sessionClientFactory("grpc-js", first.url);
      const { sessionId } = await startSession(one.open(), { environmentId, tools: [tool("read_file")] });
      one.close();
      // A graceful stop detaches the session: the next process adopts it at its first attach.
      await first.close();

      const second = await startServer(env);
      const two = sessionClientFactory("grpc-js", second.url);
      const client = two.open();
      client.send({ request: { case: "resume", value: { sessionId, afterSeq: 0n } } });
      fake.plan({ text: "ok" });
      client.send(rq.user("which tools?"));
      await nextOf(client, "turnComplete");
      expect(offeredNames(fake.requests.at(-1)!.body)).toEqual(["read_file", ...TEAM_TOOLS]);
      client.send(rq.cancelSession());
      await client.status;
      two.close();
      await second.close();
    } finally {
      await fake.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
