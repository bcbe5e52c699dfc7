// What v0.2 clients send at `start` keeps working (session-behaviour.md §1): system messages
// in history join the system prompt, other roles and empty parts are skipped with one
// non-fatal SessionError, a repeated tool name keeps the last, and any tool name is accepted:
// the provider sees safe names, the client and the transcript its own. Also §2: an unknown
// ai_mode runs as react (and is logged). Real clients, the fake OpenAI (which refuses names
// the real API refuses), a real SQLite file, and a spawned server for the log.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { clientToolsOf, messagesOf, SERVER_TOOLS, systemOf, toolNames } from "../session/chat-body.ts";
import { GRPC, type SessionFixture, startSessionFixture } from "../session/fixture.ts";
import { spawnServer, type SpawnedServer } from "../support/server.ts";
import { type ClientKind, sessionClientFactory } from "../support/session-client.ts";
import { barrier, nextOf, readTurn, rq, startSession, textOf, tool, turnCompleteOf, responseValue, valuesOf } from "../support/session-protocol.ts";

const SAFE = /^[a-zA-Z0-9_-]{1,64}$/;
const LONG_NAME = `robot_${"very_long_".repeat(7)}name`; // 82 characters
const text = (t: string) => ({ part: { case: "text" as const, value: { text: t } } });

describe.each<{ api: "chat" | "responses" }>([{ api: "chat" }, { api: "responses" }])("over the $api API", ({ api }) => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture({ env: { ROZ_OPENAI_API: api } });
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  /** Names of the tools offered in request `index`, whatever the API. */
  const offered = async (index: number): Promise<string[]> => {
    const body = (await fx.request(index)).body;
    return api === "chat" ? toolNames(body) : (body.tools ?? []).map((t: { name: string }) => t.name).filter((n: string) => !SERVER_TOOLS.has(n));
  };
  /** Names of the tool calls in the history sent with request `index`. */
  const calledInHistory = async (index: number): Promise<string[]> => {
    const body = (await fx.request(index)).body;
    if (api === "chat") return messagesOf(body).flatMap((m) => (m.tool_calls ?? []).map((c) => c.function.name));
    return body.input.filter((i: { type?: string }) => i.type === "function_call").map((i: { name: string }) => i.name);
  };

  it.each<ClientKind>(["grpc-js", "connect"])(
    "tool names a provider refuses are accepted and mapped: the model sees safe names, the client and the transcript its own (%s)",
    async (kind) => {
      const names = ["github.create_issue", LONG_NAME, "ok_tool", "has space/ünï"];
      const { client, started } = await fx.start(kind, {
        tools: names.map((n) => tool(n)),
        history: [
          { role: "user", parts: [text("open an issue")] },
          { role: "assistant", parts: [{ part: { case: "toolUse", value: { id: "old_1", name: "github.create_issue", input: { title: "a" } } } }] },
          { role: "user", parts: [{ part: { case: "toolResult", value: { toolUseId: "old_1", name: "github.create_issue", content: "#1" } } }] },
        ],
      });
      fx.fake.plan({ text: "Ready." });
      client.send(rq.user("which tools?"));
      expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
      const safe = await offered(0);
      expect(safe).toHaveLength(4);
      for (const name of safe) expect(name).toMatch(SAFE);
      expect(new Set(safe).size).toBe(4);
      expect(safe[2]).toBe("ok_tool");
      expect(safe[0]).toMatch(/^github_create_issue_[0-9a-f]{8}$/);
      // The history's call is renamed the same way, and the mapping is stable from one request to the next.
      expect(await calledInHistory(0)).toEqual([safe[0]]);

      fx.fake.plan(
        {
          toolCalls: [
            { id: "call_issue", name: safe[0]!, arguments: { title: "b" } },
            { id: "call_long", name: safe[1]!, arguments: {} },
          ],
        },
        { text: "Both done." },
      );
      client.send(rq.user("again, and the long one"));
      const first = await nextOf(client, "toolRequest");
      expect(first).toMatchObject({ toolCallId: "call_issue", toolName: "github.create_issue", parameters: { title: "b" } });
      client.send(rq.toolResult("call_issue", "#2"));
      expect(await nextOf(client, "toolRequest")).toMatchObject({ toolCallId: "call_long", toolName: LONG_NAME });
      client.send(rq.toolResult("call_long", "done"));
      const turn = await readTurn(client);
      expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
      expect(valuesOf(turn, "toolDenied")).toEqual([]);
      expect(await offered(2)).toEqual(safe);
      expect(await calledInHistory(2)).toEqual([safe[0], safe[0], safe[1]]);

      const transcript = await fx.rest("GET", `/v1/sessions/${started.sessionId}/messages?format=turns`);
      expect(transcript.status).toBe(200);
      expect(transcript.json.turns[1].tool_calls.map((c: { name: string }) => c.name)).toEqual(["github.create_issue", LONG_NAME]);
    },
  );
});

describe("history, duplicates and schemas (chat API)", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture();
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  it.each<ClientKind>(["grpc-js", "connect"])(
    "system messages join the system prompt; other roles and empty parts are skipped with ONE invalid_argument right after SessionStarted (%s)",
    async (kind) => {
      const client = fx.open(kind);
      client.send(
        rq.start({
          history: [
            { role: "system", parts: [text("You are Rex, a careful robot.")] },
            { role: "user", parts: [text("hello")] },
            { role: "tool", parts: [text("TOOL-OUTPUT")] },
            { role: "assistant", parts: [{}, text("hi there")] },
            { role: "developer", parts: [text("DEV-NOTE")] },
          ],
        }),
      );
      expect((await client.next()).response.case).toBe("sessionStarted");
      const error = responseValue(await client.next(), "error");
      expect(error).toMatchObject({ code: "invalid_argument", retryable: false });
      expect(error.message).toContain('history[2] (role "tool")');
      expect(error.message).toContain("history[3].parts[0] (empty)");
      expect(error.message).toContain('history[4] (role "developer")');
      // Only one, and the session goes on.
      expect(valuesOf(await barrier(client), "error")).toEqual([]);
      fx.fake.plan({ text: "Hello again." });
      client.send(rq.user("next"));
      const turn = await readTurn(client);
      expect(textOf(turn)).toBe("Hello again.");
      const body = (await fx.request(0)).body;
      expect(systemOf(body)).toContain("You are Rex, a careful robot.");
      expect(
        messagesOf(body)
          .filter((m) => m.role !== "system")
          .map((m) => [m.role, m.content]),
      ).toEqual([
        ["user", "hello"],
        ["assistant", "hi there"],
        ["user", "next"],
      ]);
    },
  );

  it("a repeated tool name means the last one wins: in start.tools, user_message.tools and register_tools (grpc-js)", async () => {
    const described = (name: string, description: string) => ({ ...tool(name), description });
    const { client } = await fx.start("grpc-js", { tools: [described("dup", "first"), described("other", "o"), described("dup", "second")] });
    expect(valuesOf(await barrier(client), "error")).toEqual([]);
    const toolsOfNextTurn = async (extra = {}): Promise<[string, string][]> => {
      fx.fake.plan({ text: "ok" });
      client.send(rq.user("which tools?", extra));
      const turn = await readTurn(client);
      expect(valuesOf(turn, "error")).toEqual([]);
      const body = fx.requests().at(-1)!.body;
      return clientToolsOf(body).map((t) => [t.function.name, t.function.description]);
    };
    expect(await toolsOfNextTurn()).toEqual([
      ["other", "o"],
      ["dup", "second"],
    ]);
    expect(await toolsOfNextTurn({ tools: [described("t", "early"), described("t", "late")] })).toEqual([["t", "late"]]);
    client.send(rq.register([described("reg", "one"), described("reg", "two")]));
    expect(await toolsOfNextTurn()).toEqual([
      ["other", "o"],
      ["dup", "second"],
      ["reg", "two"],
    ]);
  });

  it("an unknown ai_mode gets the react instructions, an alias of ooda_re_act the OODA ones (connect)", async () => {
    const { client } = await fx.start("connect");
    for (const aiMode of ["plan", "ooda"]) {
      fx.fake.plan({ text: "ok" });
      client.send(rq.user("hi", { aiMode }));
      expect(valuesOf(await readTurn(client), "error")).toEqual([]);
    }
    const [plan, ooda] = [systemOf((await fx.request(0)).body), systemOf((await fx.request(1)).body)];
    expect(plan).toContain("Think about what is needed");
    expect(plan).not.toContain("Observe-Orient-Decide-Act");
    expect(ooda).toContain("Observe-Orient-Decide-Act");
  });

  it("a parameters_schema that is not an object schema is still refused at start (connect)", async () => {
    const client = fx.open("connect");
    client.send(rq.start({ tools: [tool("probe", { parameters: { type: "string" } })] }));
    expect(responseValue(await client.next(), "error")).toMatchObject({ code: "invalid_argument", retryable: false });
    expect((await client.status).code).toBe(GRPC.INVALID_ARGUMENT);
  });
});

describe("ai_mode (a spawned server, scripted model)", () => {
  let server: SpawnedServer;
  beforeAll(async () => {
    server = await spawnServer({ ROZ_KEEPALIVE_INTERVAL_MS: "3600000" });
  });
  afterAll(() => server?.dispose());

  it("an unknown ai_mode runs the turn as react and is logged; ooda, ooda_react stay aliases (grpc-js)", async () => {
    const factory = sessionClientFactory("grpc-js", server.url);
    try {
      const client = factory.open();
      await startSession(client);
      for (const aiMode of ["auto", "plan", "ooda", "ooda_react", "ooda_re_act"]) {
        client.send(rq.user("hello", { aiMode, messageId: `m-${aiMode}` }));
        const turn = await readTurn(client);
        expect(valuesOf(turn, "error"), aiMode).toEqual([]);
        expect(turnCompleteOf(turn), aiMode).toMatchObject({ messageId: `m-${aiMode}`, stopReason: "end_turn" });
      }
      client.end();
      expect((await client.status).code).toBe(GRPC.OK);
      await expect
        .poll(() =>
          server
            .logLines()
            .filter((l) => l["msg"] === "unknown ai_mode: running the turn as react")
            .map((l) => l["aiMode"]),
        )
        .toEqual(["auto", "plan"]);
    } finally {
      factory.close();
    }
  });
});
