// /v1/environments CRUD over real HTTP, and the rules a StartSession then enforces.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestServer } from "../support/server.ts";
import { client, makeKey, startAuthServer, startSession } from "./support.ts";

let server: TestServer;
let api: ReturnType<typeof client>;
let secret: string;

beforeAll(async () => {
  server = await startAuthServer();
  secret = (await makeKey(server, "acme", ["environments", "sessions"])).secret;
  api = client(server, secret);
});
afterAll(async () => {
  await server?.close();
});

describe("/v1/environments", () => {
  it("creates with defaults, reads, updates, and deletes", async () => {
    const created = await api.post("/v1/environments", { body: { name: "dev" } });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ name: "dev", kind: "default", permissions: [], tool_defaults: {}, is_default: false });
    expect(created.json.default_model).toBeUndefined();
    const id = created.json.id as string;
    expect((await api.get(`/v1/environments/${id}`)).json).toEqual(created.json);

    const patched = await api.patch(`/v1/environments/${id}`, {
      body: {
        kind: "ci",
        default_model: "scripted/default",
        system_instructions: "be brief",
        permissions: [{ tool_pattern: "shell_*", policy: "require_confirmation", category: "physical", reason: "touches the machine" }],
        tool_defaults: { shell_exec: { timeout_ms: 5000 } },
      },
    });
    expect(patched.status).toBe(200);
    expect(patched.json).toMatchObject({
      id,
      name: "dev",
      kind: "ci",
      default_model: "scripted/default",
      system_instructions: "be brief",
      permissions: [{ tool_pattern: "shell_*", policy: "require_confirmation", category: "physical", reason: "touches the machine" }],
      tool_defaults: { shell_exec: { timeout_ms: 5000 } },
    });
    expect(Date.parse(patched.json.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.json.updated_at));

    const cleared = await api.patch(`/v1/environments/${id}`, { body: { default_model: null, system_instructions: null } });
    expect(cleared.json.default_model).toBeUndefined();
    expect(cleared.json.system_instructions).toBeUndefined();
    expect(cleared.json.kind).toBe("ci");

    const deleted = await api.delete(`/v1/environments/${id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe("");
    expect((await api.get(`/v1/environments/${id}`)).status).toBe(404);
    expect((await api.delete(`/v1/environments/${id}`)).status).toBe(404);
    expect((await api.patch(`/v1/environments/${id}`, { body: { kind: "x" } })).status).toBe(404);
  });

  it("a taken name is 409, on create and on rename", async () => {
    await api.post("/v1/environments", { body: { name: "taken" } });
    const again = await api.post("/v1/environments", { body: { name: "taken" } });
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe("conflict");
    const other = (await api.post("/v1/environments", { body: { name: "other" } })).json.id;
    expect((await api.patch(`/v1/environments/${other}`, { body: { name: "taken" } })).status).toBe(409);
  });

  it("a model the catalog does not know is 422 model_unavailable", async () => {
    const reply = await api.post("/v1/environments", { body: { name: "m", default_model: "nope/model" } });
    expect(reply.status).toBe(422);
    expect(reply.json.error).toMatchObject({ code: "model_unavailable", details: { field: "body.default_model" } });
    expect(reply.json.error.message).toContain("nope/model");
    const id = (await api.post("/v1/environments", { body: { name: "m" } })).json.id;
    expect((await api.patch(`/v1/environments/${id}`, { body: { default_model: "ghost/x" } })).status).toBe(422);
  });

  it("permission rules are validated: glob syntax, policy, category, unknown fields", async () => {
    const bad = async (rule: unknown) => (await api.post("/v1/environments", { body: { name: "r", permissions: [rule] } })).json.error;
    expect(await bad({ tool_pattern: "fs_[", policy: "deny" })).toMatchObject({
      code: "invalid_argument",
      details: { field: "body.permissions.0.tool_pattern" },
    });
    expect((await bad({ tool_pattern: "fs_*", policy: "maybe" })).message).toContain("body.permissions.0.policy");
    expect((await bad({ tool_pattern: "fs_*", policy: "deny", category: "magic" })).message).toContain("body.permissions.0.category");
    expect((await bad({ tool_pattern: "fs_*", policy: "deny", pattern: "x" })).message).toBe("body.permissions.0.pattern: unknown field");
    expect((await bad({ policy: "deny" })).message).toContain("body.permissions.0.tool_pattern");
  });

  it("lists newest first in pages with an opaque cursor", async () => {
    const names = ["p1", "p2", "p3", "p4", "p5"];
    for (const name of names) expect((await api.post("/v1/environments", { body: { name } })).status).toBe(201);
    const seen: { id: string; name: string; created_at: string }[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await api.get(`/v1/environments?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(page.status).toBe(200);
      seen.push(...page.json.items);
      cursor = page.json.next_cursor;
      pages++;
    } while (cursor);
    expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
    expect(seen.map((e) => e.name)).toEqual(expect.arrayContaining(names));
    expect(pages).toBe(Math.ceil(seen.length / 2));
    // Newest first; items made in the same millisecond are ordered by id.
    const key = (e: { id: string; created_at: string }) => [Date.parse(e.created_at), e.id] as const;
    const sorted = [...seen].sort((a, b) => key(b)[0] - key(a)[0] || (key(b)[1] > key(a)[1] ? 1 : -1));
    expect(seen).toEqual(sorted);
    expect((await api.get("/v1/environments")).json.next_cursor).toBeUndefined();
  });
});

describe("environments drive StartSession", () => {
  it("a session in an environment enforces its rules first", async () => {
    const env = await api.post("/v1/environments", {
      body: { name: "locked", permissions: [{ tool_pattern: "rm_*", policy: "deny", reason: "no deleting" }] },
    });
    const { first, session } = await startSession(server.url, secret, { environmentId: env.json.id });
    expect(first.response.case).toBe("sessionStarted");
    if (first.response.case === "sessionStarted") {
      expect(first.response.value.permissions[0]).toMatchObject({ toolPattern: "rm_*", policy: "deny", reason: "no deleting" });
    }
    session.end();
    await session.done;
  });

  it("is_default makes an environment the one an empty environment_id selects", async () => {
    const env = await api.post("/v1/environments", {
      body: { name: "main", is_default: true, permissions: [{ tool_pattern: "deploy", policy: "require_confirmation" }] },
    });
    expect(env.json.is_default).toBe(true);
    const { first, session } = await startSession(server.url, secret);
    expect(first.response.case === "sessionStarted" && first.response.value.permissions[0]?.toolPattern).toBe("deploy");
    session.end();
    await session.done;
    const sessions = await api.get(`/v1/sessions?environment_id=${env.json.id}`);
    expect(sessions.json.items).toHaveLength(1);
  });
});
