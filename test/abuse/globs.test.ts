// Permission globs match in linear time: the extglob that froze the server for seconds is
// refused when saved or configured, the worst patterns the dialect allows stay cheap, and
// a stored pattern that no longer compiles fails closed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileGlob } from "../../src/agent/index.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { sessionClientFactory } from "../support/session-client.ts";
import { nextOf, readTurn, rq, startSession, tool, valuesOf } from "../support/session-protocol.ts";
import { client } from "../rest/support.ts";
import { STALL_BOUND_MS, startBystander } from "../support/bystander.ts";

const ATTACK = "+(a*)+(a*)b";
const script = (name: string) => `script: ${JSON.stringify({ responses: [[{ tool_call: { name, arguments: {} } }], [{ text: "done" }]] })}`;

describe("the glob dialect", () => {
  const matches = (pattern: string, name: string): boolean => {
    const glob = compileGlob(pattern);
    if (!glob.ok) throw new Error(glob.error);
    return glob.matches(name);
  };

  it("matches *, ?, classes and escapes; * crosses / and dots", () => {
    expect(matches("fs_*", "fs_read")).toBe(true);
    expect(matches("fs_*", "shell")).toBe(false);
    expect(matches("*", "")).toBe(true);
    expect(matches("*", "a/b.c")).toBe(true);
    expect(matches("mcp/*", "mcp/github/issues")).toBe(true);
    expect(matches("a?c", "abc")).toBe(true);
    expect(matches("a?c", "ac")).toBe(false);
    expect(matches("[a-c]x", "bx")).toBe(true);
    expect(matches("[!a-c]x", "bx")).toBe(false);
    expect(matches("[^a-c]x", "dx")).toBe(true);
    expect(matches("[]]", "]")).toBe(true);
    expect(matches("\\*", "*")).toBe(true);
    expect(matches("\\*", "a")).toBe(false);
    expect(matches("a*b*c", "axxbyyc")).toBe(true);
    expect(matches("a*b*c", "axxbyy")).toBe(false);
    expect(matches("\\+\\(x\\)", "+(x)")).toBe(true);
  });

  it("refuses extglobs, braces, alternation and broken classes", () => {
    for (const pattern of [ATTACK, "@(a|b)", "!(x)", "{a,b}", "a|b", "fs_[", "fs_]", "[]", "[z-a]", "x\\"]) {
      const glob = compileGlob(pattern);
      expect(glob.ok, pattern).toBe(false);
    }
  });

  it("the worst patterns the dialect allows stay cheap on 64-character names", () => {
    const name = `${"a".repeat(63)}-`;
    const patterns = ["*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", `${"*".repeat(200)}b`, "?*?*?*?*?*?*?*?*?*?*?*b", "[a]*[a]*[a]*[a]*[a]*[a]*b"];
    const started = performance.now();
    for (let i = 0; i < 1000; i++) for (const p of patterns) expect(matches(p, name)).toBe(false);
    // 4,000 worst-case matches; the extglob took 4.9 s for ONE at 26 characters.
    expect(performance.now() - started).toBeLessThan(STALL_BOUND_MS);
  });
});

describe("globs on a server", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server?.close());

  it("REST refuses the attack pattern with a 400 naming the field", async () => {
    const api = client(server);
    const reply = await api.post("/v1/environments", {
      body: {
        name: "attack",
        permissions: [
          { tool_pattern: "ok_*", policy: "allow" },
          { tool_pattern: ATTACK, policy: "deny" },
        ],
      },
    });
    expect(reply.status).toBe(400);
    expect(reply.json.error).toMatchObject({ code: "invalid_argument", details: { field: "body.permissions.1.tool_pattern" } });
    expect(reply.json.error.message).toContain("not supported");
  });

  it("ROZ_PERMISSION_RULES with the attack pattern is a startup error naming the variable", async () => {
    await expect(startServer({ ROZ_PERMISSION_RULES: JSON.stringify([{ tool_pattern: ATTACK, policy: "deny" }]) })).rejects.toThrow(
      /ROZ_PERMISSION_RULES\[0\]\.tool_pattern: invalid glob/,
    );
  });

  it("a session deciding a 64-character tool against the worst valid pattern answers quickly; a bystander keeps streaming", async () => {
    const env = await client(server).post("/v1/environments", {
      body: { name: "worst", permissions: [{ tool_pattern: "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", policy: "deny" }] },
    });
    expect(env.status).toBe(201);
    const bystander = await startBystander(server.url);
    const factory = sessionClientFactory("grpc-js", server.url);
    try {
      const name = "a".repeat(64);
      const attacker = factory.open();
      await startSession(attacker, { environmentId: env.json.id, tools: [tool(name)] });
      attacker.send(rq.user(script(name)));
      // Not denied (no b at the end): the call reaches the client.
      expect((await nextOf(attacker, "toolRequest", 10_000)).toolName).toBe(name);
      attacker.end();
    } finally {
      factory.close();
    }
    const report = await bystander.stop();
    expect(report.p99Ms).toBeLessThan(STALL_BOUND_MS);
  });

  it("a stored pattern that no longer compiles fails closed: deny matches everything, allow nothing", async () => {
    const tenant = await server.app.store.ensureTenant("default");
    const denyAll = await server.app.store.createEnvironment(tenant.id, { name: "legacy-deny", permissions: [{ toolPattern: ATTACK, policy: "deny" }] });
    const allowNone = await server.app.store.createEnvironment(tenant.id, {
      name: "legacy-allow",
      permissions: [
        { toolPattern: "{x,y}", policy: "allow" },
        { toolPattern: "*", policy: "deny" },
      ],
    });
    const factory = sessionClientFactory("grpc-js", server.url);
    try {
      for (const env of [denyAll, allowNone]) {
        const session = factory.open();
        await startSession(session, { environmentId: env.id, tools: [tool("x")] });
        session.send(rq.user(script("x")));
        const turn = await readTurn(session, 10_000);
        expect(valuesOf(turn, "toolRequest"), env.name).toEqual([]);
        session.end();
        await session.status;
      }
    } finally {
      factory.close();
    }
  });
});
