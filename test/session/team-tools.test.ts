// §7 first bullet: the team tools are opt-in. A session's model sees spawn_worker and
// wait_for_workers only when its environment says `teams.enabled`, or ROZ_TEAMS_DEFAULT=on and
// the environment does not say false; otherwise exactly the client's tools. A turn's own
// tools replace only the client's tools. The fake provider records what the model was offered.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { readTurn, rq, tool } from "../support/session-protocol.ts";
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
