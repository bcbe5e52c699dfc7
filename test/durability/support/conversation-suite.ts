/**
 * Sessions end to end on one store: a conversation with a tool call over gRPC against the
 * real CLI (model: the fake OpenAI server), the server killed and restarted on the same
 * data, the transcript read back through REST, and a NEW session started with it as
 * `StartSession.history` — whose next model request must carry the earlier conversation.
 * Usage in `GET /v1/sessions/{id}` must equal the sum of the `turn_complete`s the client saw.
 */
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConversationMessageSchema } from "../../../src/gen/roz/v1/agent_pb.js";
import { request } from "../../rest/support.ts";
import { chatFrames, type FakeOpenAI, type FakeReply, startFakeOpenAI } from "../../support/fake-openai/index.ts";
import { type SpawnedServer, spawnServer } from "../../support/server.ts";
import { type SessionClientFactory, sessionClientFactory } from "../../support/session-client.ts";
import { nextOf, readTurn, rq, startSession, tool, turnCompleteOf, type StartInit } from "../../support/session-protocol.ts";
import type { DurabilityBackend } from "./backend.ts";
import { addUsage, tokensOf, type Usage, zeroUsage } from "./scripted-turns.ts";

const MODEL = "openai/fake-model";
const TOOL = "read_file";

/** A reply whose final usage chunk also reports cache writes (`cache_write_tokens`), which `FakeReply` cannot express. */
function withCacheWrites(reply: FakeReply, cacheWrites: number): FakeReply {
  const frames = [...chatFrames(reply, { model: "fake-model", stream_options: { include_usage: true } }, "chatcmpl-cachewrites")];
  const last = frames.at(-1) as { usage: { prompt_tokens_details: Record<string, number> } };
  last.usage.prompt_tokens_details["cache_write_tokens"] = cacheWrites;
  return { frames };
}

const toUsage = (u: { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheCreationTokens: number } | undefined): Usage => ({
  input_tokens: u?.inputTokens ?? 0,
  output_tokens: u?.outputTokens ?? 0,
  cache_read_tokens: u?.cacheReadTokens ?? 0,
  cache_creation_tokens: u?.cacheCreationTokens ?? 0,
});

/** Chat Completions messages as the fake recorded them. */
type ChatMessage = { role: string; [field: string]: unknown };

/** Defines the suite for one store; `makeBackend` runs in `beforeAll`. */
export function defineConversationSuite(name: string, makeBackend: () => Promise<DurabilityBackend>): void {
  describe(`sessions end to end: ${name}`, () => {
    let backend: DurabilityBackend | undefined;
    let fake: FakeOpenAI;
    const servers: SpawnedServer[] = [];
    const factories: SessionClientFactory[] = [];
    const spawn = async (): Promise<SpawnedServer> => {
      const server = await spawnServer({
        ...backend!.env,
        OPENAI_API_KEY: "sk-test",
        OPENAI_BASE_URL: fake.baseURL,
        ROZ_OPENAI_API: "chat",
        ROZ_DEFAULT_MODEL: MODEL,
        ROZ_SESSION_RATE_LIMIT_PER_MINUTE: "0",
        ROZ_RATE_LIMIT_PER_MINUTE: "0",
        ROZ_KEEPALIVE_INTERVAL_MS: "3600000",
      });
      servers.push(server);
      return server;
    };
    const open = (url: string) => {
      const factory = sessionClientFactory("grpc-js", url);
      factories.push(factory);
      return factory.open();
    };

    beforeAll(async () => {
      fake = await startFakeOpenAI();
      backend = await makeBackend();
    });
    afterAll(async () => {
      for (const factory of factories) factory.close();
      for (const server of servers) await server.dispose();
      await fake?.close();
      await backend?.dispose();
    });

    it("a conversation with a tool call is readable through REST after a restart and resumes through StartSession.history", async () => {
      const start: StartInit = { model: MODEL, tools: [tool(TOOL, { pure: true })] };
      fake.plan(
        {
          reasoning: "The user wants the notes.",
          text: "Let me read it.",
          toolCalls: [{ id: "call_notes", name: TOOL, arguments: { path: "notes.txt" } }],
          usage: { input: 120, output: 15, cached: 64 },
        },
        { text: "The notes say: pineapple.", usage: { input: 180, output: 9, cached: 128 } },
        withCacheWrites({ text: "You asked about notes.txt.", usage: { input: 210, output: 8, cached: 160 } }, 40),
      );

      // --- the first server: two turns, the first with a tool call answered by the client.
      let server = await spawn();
      const a = open(server.url);
      const started = await startSession(a, start);
      expect(started.model).toBe(MODEL);
      const sessionA = started.sessionId;
      const seenA: Usage[] = [];

      a.send(rq.user("Please read notes.txt", { messageId: "m1", context: [{ block: { case: "text", value: "project fruit" }, label: "ctx" }] }));
      const call = await nextOf(a, "toolRequest");
      expect(call).toMatchObject({ toolCallId: "call_notes", toolName: TOOL });
      a.send(rq.toolResult(call.toolCallId, "pineapple (42 bytes)"));
      const turn1 = turnCompleteOf(await readTurn(a));
      expect(turn1).toMatchObject({ messageId: "m1", stopReason: "end_turn" });
      seenA.push(toUsage(turn1.usage));

      a.send(rq.user("What file was it?", { messageId: "m2" }));
      const turn2 = turnCompleteOf(await readTurn(a));
      expect(turn2).toMatchObject({ messageId: "m2", stopReason: "end_turn" });
      seenA.push(toUsage(turn2.usage));
      // What the provider reported reaches the client, cache tokens included.
      expect(seenA).toEqual([
        { input_tokens: 300, output_tokens: 24, cache_read_tokens: 192, cache_creation_tokens: 0 },
        { input_tokens: 210, output_tokens: 8, cache_read_tokens: 160, cache_creation_tokens: 40 },
      ]);
      a.end();
      expect((await a.status).code).toBe(0);
      const ended = await request(server.url, "GET", `/v1/sessions/${sessionA}`);
      expect(ended.json.status).toBe("completed");

      // --- killed and restarted on the same data: nothing of the ended session is lost.
      server.child.kill("SIGKILL");
      await server.exited;
      server = await spawn();
      const afterRestart = await request(server.url, "GET", `/v1/sessions/${sessionA}`);
      expect(afterRestart.json).toMatchObject({
        status: "completed",
        model: MODEL,
        turn_count: 2,
        usage: seenA.reduce(addUsage, zeroUsage()),
      });
      const turns = (await request(server.url, "GET", `/v1/sessions/${sessionA}/messages?format=turns`)).json.turns;
      expect(turns.map((t: { message_id: string; usage: Usage }) => [t.message_id, tokensOf(t.usage)])).toEqual([
        ["m1", seenA[0]],
        ["m2", seenA[1]],
      ]);
      expect(turns[0].tool_calls).toEqual([
        expect.objectContaining({ id: "call_notes", name: TOOL, parameters: { path: "notes.txt" }, success: true, result: "pineapple (42 bytes)" }),
      ]);

      // --- a new session restored from the REST transcript.
      const { messages } = (await request(server.url, "GET", `/v1/sessions/${sessionA}/messages?format=conversation`)).json as {
        messages: JsonValue[];
      };
      const history = messages.map((m) => fromJson(ConversationMessageSchema, m));
      fake.plan({ text: "They said pineapple.", usage: { input: 260, output: 5, cached: 200 } });
      const before = fake.requests.length;
      const b = open(server.url);
      const sessionB = (await startSession(b, { ...start, history })).sessionId;
      b.send(rq.user("Remind me what the notes said.", { messageId: "m3" }));
      const turn3 = turnCompleteOf(await readTurn(b));
      expect(turn3).toMatchObject({ messageId: "m3", stopReason: "end_turn" });
      const seenB = toUsage(turn3.usage);
      expect(seenB).toEqual({ input_tokens: 260, output_tokens: 5, cache_read_tokens: 200, cache_creation_tokens: 0 });

      // The model saw the restored conversation: user text and context, the tool call, its result, the answers, in
      // order (the transcript keeps a turn's text together, after its tool results: transcript.ts), then the new prompt.
      expect(fake.requests.length).toBe(before + 1);
      const sent = (fake.requests[before]!.body.messages as ChatMessage[]).filter((m) => m.role !== "system");
      expect(sent).toEqual([
        { role: "user", content: "Please read notes.txt\n\n[ctx] project fruit" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_notes", type: "function", function: { name: TOOL, arguments: JSON.stringify({ path: "notes.txt" }) } }],
        },
        { role: "tool", tool_call_id: "call_notes", content: "pineapple (42 bytes)" },
        { role: "assistant", content: "Let me read it.\n\nThe notes say: pineapple." },
        { role: "user", content: "What file was it?" },
        { role: "assistant", content: "You asked about notes.txt." },
        { role: "user", content: "Remind me what the notes said." },
      ]);

      b.end();
      expect((await b.status).code).toBe(0);
      const sessionBJson = (await request(server.url, "GET", `/v1/sessions/${sessionB}`)).json;
      expect(sessionBJson).toMatchObject({ status: "completed", turn_count: 1, usage: seenB });
    }, 60_000);
  });
}
