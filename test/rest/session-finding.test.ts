// Finding sessions (§13): title and metadata at start (grpc-js and Connect), PATCH, the list's
// filters, full-text search and cursor paging — through real clients, on SQLite and PostgreSQL.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StartSessionSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { postgresForTests } from "../support/postgres.ts";
import type { TestServer } from "../support/server.ts";
import { type ClientKind, sessionClientFactory } from "../support/session-client.ts";
import { client, makeKey, startAuthServer, type TestKey } from "./support.ts";

const pg = await postgresForTests();
afterAll(() => pg?.stop());

const backends: [string, () => Promise<Record<string, string>>][] = [
  ["sqlite", async () => ({})],
  ...(pg ? [["postgres", async () => ({ DATABASE_URL: await pg.createDatabase() })] as [string, () => Promise<Record<string, string>>]] : []),
];

type Start = MessageInitShape<typeof StartSessionSchema>;

describe.each(backends)("finding sessions: %s", (_name, envOf) => {
  let server: TestServer;
  let key: TestKey;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startAuthServer(await envOf());
    key = await makeKey(server, "finder");
    api = client(server, key.secret);
  });
  afterAll(() => server?.close());

  /** Starts a session with `kind`, runs one turn whose reply is `answer` when given, and ends it cleanly. */
  async function session(kind: ClientKind, start: Start, turn?: { say: string; answer: string }): Promise<string> {
    const factory = sessionClientFactory(kind, server.url);
    try {
      const call = factory.open({ authorization: `Bearer ${key.secret}` });
      call.send({ request: { case: "start", value: start } });
      const first = await call.next(10_000);
      if (first.response.case !== "sessionStarted") throw new Error(`start refused: ${JSON.stringify(first.response.value)}`);
      if (turn !== undefined) {
        const script = { responses: [[{ text: turn.answer }]] };
        call.send({ request: { case: "userMessage", value: { content: `${turn.say} script:${JSON.stringify(script)}` } } });
        while ((await call.next(10_000)).response.case !== "turnComplete");
      }
      call.end();
      await call.status;
      // Each session in a later millisecond: time filters have something to tell apart.
      await sleep(3);
      return first.response.value.sessionId;
    } finally {
      factory.close();
    }
  }

  const listIds = async (query: string) => {
    const reply = await api.get(`/v1/sessions?${query}`);
    expect(reply.status, reply.text).toBe(200);
    return (reply.json.items as { id: string }[]).map((s) => s.id);
  };

  it("StartSession.title and metadata, over grpc-js and Connect, are in the session's JSON", async () => {
    for (const kind of ["grpc-js", "connect"] as const) {
      const id = await session(kind, { title: `Started by ${kind}`, metadata: { client: kind, team: "infra" } });
      const reply = await api.get(`/v1/sessions/${id}`);
      expect(reply.json).toMatchObject({ id, title: `Started by ${kind}`, metadata: { client: kind, team: "infra" }, archived: false });
    }
    const plain = await session("connect", {});
    const reply = await api.get(`/v1/sessions/${plain}`);
    expect(reply.json.title).toBeUndefined();
    expect(reply.json).toMatchObject({ metadata: {}, archived: false });
  });

  it("a start with a title or metadata over the limits is refused with invalid_argument, naming the field", async () => {
    const refused: [Start, string][] = [
      [{ title: "x".repeat(257) }, "start.title"],
      [{ metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])) }, "start.metadata"],
      [{ metadata: { ["k".repeat(65)]: "v" } }, "start.metadata"],
      [{ metadata: { k: "v".repeat(513) } }, "start.metadata"],
    ];
    for (const [start, field] of refused) {
      for (const kind of ["grpc-js", "connect"] as const) {
        const factory = sessionClientFactory(kind, server.url);
        const call = factory.open({ authorization: `Bearer ${key.secret}` });
        call.send({ request: { case: "start", value: start } });
        const first = await call.next(10_000);
        expect(first.response.case).toBe("error");
        expect(first.response.value).toMatchObject({ code: "invalid_argument" });
        expect((first.response.value as { message: string }).message).toContain(field);
        expect((await call.status).code).toBe(3);
        factory.close();
      }
    }
  });

  it("PATCH sets the title, merges metadata (null removes a key) and archives; archived sessions leave the default list", async () => {
    const id = await session("connect", { title: "Draft", metadata: { team: "infra", ticket: "7" } });
    const patched = await api.patch(`/v1/sessions/${id}`, { body: { title: "Final", metadata: { ticket: null, owner: "ana" } } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.json).toMatchObject({ id, title: "Final", metadata: { team: "infra", owner: "ana" }, archived: false });
    expect(await listIds("limit=200")).toContain(id);
    expect((await api.patch(`/v1/sessions/${id}`, { body: { archived: true } })).json.archived).toBe(true);
    expect(await listIds("limit=200")).not.toContain(id);
    expect(await listIds("archived=false&limit=200")).not.toContain(id);
    expect(await listIds("archived=true&limit=200")).toEqual([id]);
    expect(await listIds("archived=any&limit=200")).toContain(id);
    const cleared = await api.patch(`/v1/sessions/${id}`, { body: { title: null, archived: false } });
    expect(cleared.json.title).toBeUndefined();
    expect((await api.get(`/v1/sessions/${id}`)).json).toMatchObject({ archived: false, metadata: { team: "infra", owner: "ana" } });
  });

  it("PATCH refuses bad input with 4xx JSON errors and changes nothing", async () => {
    const id = await session("grpc-js", { title: "Keep", metadata: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, "v"])) });
    const bad: unknown[] = [
      { title: "x".repeat(257) },
      { title: 5 },
      { metadata: { ["k".repeat(65)]: "v" } },
      { metadata: { "": "v" } },
      { metadata: { k: "v".repeat(513) } },
      { metadata: { k: 1 } },
      { archived: "yes" },
      { unknown: true },
      { metadata: { one_too_many: "v" } },
    ];
    for (const body of bad) {
      const reply = await api.patch(`/v1/sessions/${id}`, { body });
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.json.error.code).toBe("invalid_argument");
    }
    expect((await api.get(`/v1/sessions/${id}`)).json.title).toBe("Keep");
    expect((await api.patch(`/v1/sessions/${crypto.randomUUID()}`, { body: { archived: true } })).status).toBe(404);
    expect((await api.patch("/v1/sessions/not-a-uuid", { body: { archived: true } })).status).toBe(400);
    const other = await makeKey(server, "someone-else");
    expect((await client(server, other.secret).patch(`/v1/sessions/${id}`, { body: { archived: true } })).status).toBe(404);
  });

  it("filters by status, metadata.KEY=VALUE and creation time, and pages filtered lists by cursor", async () => {
    const tag = crypto.randomUUID().slice(0, 8);
    const a = await session("connect", { metadata: { batch: tag, env: "prod" } });
    const b = await session("grpc-js", { metadata: { batch: tag, env: "dev" } });
    const c = await session("connect", { metadata: { batch: tag, env: "prod" } });
    expect(await listIds(`metadata.batch=${tag}`)).toEqual([c, b, a]);
    expect(await listIds(`metadata.batch=${tag}&metadata.env=prod`)).toEqual([c, a]);
    expect(await listIds(`metadata.batch=${tag}&metadata.env=test`)).toEqual([]);
    const [ta, tc] = [(await api.get(`/v1/sessions/${a}`)).json.created_at, (await api.get(`/v1/sessions/${c}`)).json.created_at];
    expect(await listIds(`metadata.batch=${tag}&created_after=${ta}&created_before=${tc}`)).toEqual([b]);
    expect(await listIds(`metadata.batch=${tag}&created_after=${ta}`)).toEqual([c, b]);
    expect(await listIds(`metadata.batch=${tag}&status=completed`)).toEqual([c, b, a]);
    expect(await listIds(`metadata.batch=${tag}&status=active`)).toEqual([]);
    const seen: string[] = [];
    let cursor = "";
    for (;;) {
      const reply = await api.get(`/v1/sessions?metadata.batch=${tag}&limit=1${cursor ? `&cursor=${cursor}` : ""}`);
      seen.push(...reply.json.items.map((s: { id: string }) => s.id));
      if (reply.json.next_cursor === undefined) break;
      cursor = reply.json.next_cursor;
    }
    expect(seen).toEqual([c, b, a]);
    for (const query of ["created_after=yesterday", "archived=maybe", "status=sleeping", `metadata.${"k".repeat(65)}=v`, "unknown=1"]) {
      const reply = await api.get(`/v1/sessions?${query}`);
      expect(reply.status, query).toBe(400);
      expect(reply.json.error.code).toBe("invalid_argument");
    }
  });

  it("a fork started with a title and metadata carries them, and its copied turns are found by search", async () => {
    const word = `fossil${crypto.randomUUID().replace(/[^a-f]/g, "")}`;
    const source = await session("grpc-js", {}, { say: `Where is the ${word}?`, answer: "In the museum." });
    const fork = await session("connect", { fork: { sessionId: source }, title: "A fork", metadata: { origin: "fork" } });
    expect((await api.get(`/v1/sessions/${fork}`)).json).toMatchObject({ title: "A fork", metadata: { origin: "fork" } });
    expect(await listIds(`q=${word}`)).toEqual([fork, source]);
  });

  it("q searches titles and user and assistant text with the database's full-text index", async () => {
    const word = (s: string) => `${s}${crypto.randomUUID().replaceAll("-", "").replace(/\d/g, "")}`;
    const [inTitle, inUser, inAnswer, both] = [word("title"), word("user"), word("answer"), word("both")];
    const titled = await session("connect", { title: `About ${inTitle}` });
    const asked = await session("grpc-js", {}, { say: `Tell me about ${inUser} and ${both}`, answer: `Here is what I know of ${inAnswer}.` });
    const other = await session("connect", {}, { say: `Nothing ${both} here`, answer: "fine" });
    expect(await listIds(`q=${inTitle}`)).toEqual([titled]);
    expect(await listIds(`q=${inUser.toUpperCase()}`)).toEqual([asked]);
    expect(await listIds(`q=${inAnswer}`)).toEqual([asked]);
    expect(await listIds(`q=${both}`)).toEqual([other, asked]);
    expect(await listIds(`q=${encodeURIComponent(`${both}, ${inUser}!`)}`)).toEqual([asked]);
    expect(await listIds(`q=${both}&limit=1`)).toEqual([other]);
    await api.patch(`/v1/sessions/${titled}`, { body: { title: "Renamed" } });
    expect(await listIds(`q=${inTitle}`)).toEqual([]);
    await api.patch(`/v1/sessions/${asked}`, { body: { archived: true } });
    expect(await listIds(`q=${inUser}`)).toEqual([]);
    expect(await listIds(`q=${inUser}&archived=true`)).toEqual([asked]);
    const blank = await api.get(`/v1/sessions?q=${encodeURIComponent("  -- ")}`);
    expect(blank.status).toBe(400);
    expect(blank.json.error.message).toContain("q must contain");
  });
});
