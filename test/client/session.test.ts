// @roz/client against a real server over each transport: a turn with a client tool, approvals,
// typing while the agent works (queue, steer, interrupt), rollback and fork, typed errors.
import { type JsonObject, RozError, type SessionEvent } from "@roz/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../support/server.ts";
import { clients, readUntil, script, seqProblem, slowAnswer, slowText, transports } from "./support.ts";

let server: TestServer;
const made = clients();
beforeAll(async () => {
  server = await startServer({
    ROZ_PERMISSION_RULES: JSON.stringify([{ tool_pattern: "delete_*", policy: "require_confirmation", reason: "deletes files" }]),
  });
});
afterAll(async () => {
  made.closeAll();
  await server?.close();
});

const readFile = (calls: JsonObject[]) => ({
  description: "Read a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  run: async (args: JsonObject) => {
    calls.push(args);
    return `content of ${String(args["path"])}`;
  },
});

describe.each(transports)("over %s", (transport) => {
  it("a turn with a client tool: its events once and in order, on the turn and on the session; done and run give the result", async () => {
    const roz = made.make(server.url, transport);
    expect(roz.transport).toBe(transport);
    const calls: JsonObject[] = [];
    const session = await roz.startSession({ model: "scripted/default", title: "client test", tools: { read_file: readFile(calls) } });
    expect(session.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(session.model).toBe("scripted/default");
    const all = readUntil(session.events, (ev) => ev.type === "turn_complete" && ev.messageId === "second");

    const turn = session.send(script([[{ tool_call: { name: "read_file", arguments: { path: "a.txt" } } }], [{ text: "It says " }, { text: "hi." }]]));
    const types: string[] = [];
    for await (const ev of turn) types.push(ev.type);
    const result = await turn.done;
    expect(result).toMatchObject({ messageId: turn.messageId, text: "It says hi.", stopReason: "end_turn", costUsd: 0 });
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(calls).toEqual([{ path: "a.txt" }]);
    expect(types[0]).toBe("input_update");
    expect(types).toContain("tool_request");
    expect(types.indexOf("tool_finished")).toBeGreaterThan(types.indexOf("tool_request"));
    expect(types.at(-1)).toBe("turn_complete");

    expect(await session.run("hello", { messageId: "second" })).toMatchObject({ messageId: "second", text: "You said: hello", stopReason: "end_turn" });
    const events = await all;
    expect(events[0]).toMatchObject({ type: "session_started", seq: 1, sessionId: session.id });
    expect(seqProblem(events)).toBeUndefined();
    expect(session.lastSeq).toBe(events.at(-1)?.seq);
    const finished = events.find((e) => e.type === "tool_finished");
    expect(finished).toMatchObject({ toolName: "read_file", success: true, result: "content of a.txt" });

    await session.close();
    expect(session.status).toBe("ended");
    await expect(session.run("too late")).rejects.toMatchObject({ code: "session_ended" });
  });

  it("approvals: onApproval denies one call and approves another with a modifier; a throwing tool is a failed result", async () => {
    const roz = made.make(server.url, transport);
    const deleted: JsonObject[] = [];
    const asked: string[] = [];
    const session = await roz.startSession({
      tools: {
        delete_file: {
          description: "Delete a file",
          parameters: { type: "object", properties: { path: { type: "string" } } },
          run: (a: JsonObject) => deleted.push(a) && "deleted",
        },
        delete_all: { description: "Delete everything", run: () => "gone" },
        broken: { description: "Always fails", run: () => Promise.reject(new Error("disk on fire")) },
      },
      onApproval: (a) => {
        asked.push(`${a.toolName} ${a.reason}`);
        return a.toolName === "delete_all" ? false : { approved: true, modifier: { path: "safe.txt" } };
      },
    });
    const turn = session.send(
      script([
        [{ tool_call: { id: "c1", name: "delete_all", arguments: {} } }],
        [{ tool_call: { id: "c2", name: "delete_file", arguments: { path: "precious.txt" } } }],
        [{ tool_call: { id: "c3", name: "broken", arguments: {} } }],
        [{ text: "done" }],
      ]),
    );
    const events: SessionEvent[] = [];
    for await (const ev of turn) events.push(ev);
    expect((await turn.done).text).toBe("done");
    expect(asked).toEqual(["delete_all deletes files", "delete_file deletes files"]);
    expect(deleted).toEqual([{ path: "safe.txt" }]);
    expect(events.find((e) => e.type === "tool_denied")).toMatchObject({ toolCallId: "c1", reason: "approval_denied" });
    expect(events.filter((e) => e.type === "tool_finished").map((e) => [e.toolName, e.success, e.result])).toEqual([
      ["delete_file", true, "deleted"],
      ["broken", false, "disk on fire"],
    ]);
    await session.close();
  });
});

// The pair behaves the same over Connect and gRPC-Web: the longer cases run on gRPC and Connect.
describe.each(["grpc", "connect"] as const)("over %s", (transport) => {
  it("typing while it works: a queued message gets its own turn, a steer joins the running one, an interrupt cancels it", async () => {
    const roz = made.make(server.url, transport);
    const session = await roz.startSession();
    const first = session.send(slowAnswer(6, 150), { messageId: "first" });
    await readUntil(first, (ev) => ev.type === "text_delta");
    const queued = session.send("queued hello", { messageId: "queued" });
    const steered = session.send("steer hello", { delivery: "steer", messageId: "steered" });
    const [a, q, s] = await Promise.all([first.done, queued.done, steered.done]);
    expect(a).toMatchObject({ messageId: "first", stopReason: "end_turn" });
    expect(a.text.startsWith(slowText(6))).toBe(true);
    expect(s.messageId).toBe("first"); // the steer was answered in the turn it joined
    expect(q).toMatchObject({ messageId: "queued", text: "You said: queued hello" });

    const long = session.send(slowAnswer(20, 100), { messageId: "long" });
    await readUntil(long, (ev) => ev.type === "text_delta");
    const now = await session.run("do this instead", { delivery: "interrupt", messageId: "now" });
    expect((await long.done).stopReason).toBe("cancelled");
    expect(now.text).toBe("You said: do this instead");

    const cancelled = session.send(slowAnswer(20, 100), { messageId: "cancel-me" });
    await readUntil(cancelled, (ev) => ev.type === "text_delta");
    const dropped = session.send("never runs", { messageId: "dropped" });
    await readUntil(dropped, (ev) => ev.type === "input_update");
    await session.cancelTurn({ clearQueue: true });
    expect((await cancelled.done).stopReason).toBe("cancelled");
    await expect(dropped.done).rejects.toMatchObject({ code: "dropped" });
    await session.close();
  });

  it("rollback and fork; refusals are RozErrors with the server's code and gRPC status", async () => {
    const roz = made.make(server.url, transport);
    const calls: JsonObject[] = [];
    const tools = { read_file: readFile(calls) };
    const session = await roz.startSession({ tools });
    await session.run("one");
    await session.run("two");
    expect(await session.rollback(1)).toEqual({ turns: 1, remainingTurns: 1 });
    await expect(session.rollback(5)).rejects.toMatchObject({ code: "invalid_argument" });
    // The same runners serve the fork, which takes its source's tool schemas.
    const fork = await session.fork({ throughTurn: 1, title: "a fork", tools });
    expect(fork.id).not.toBe(session.id);
    expect((await fork.run("three")).text).toBe("You said: three");
    await fork.close();
    await session.close();

    const refused = await roz.startSession({ model: "nope/none" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RozError);
    expect(refused).toMatchObject({ code: "model_unavailable", retryable: false, status: 9 });
    const missing = await roz.attachSession("00000000-0000-4000-8000-000000000000").catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: "not_found", status: 5 });
  });
});
