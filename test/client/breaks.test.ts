// @roz/client keeps the protocol's promise itself: a TCP proxy between it and a real server is
// cut mid-turn (both sides destroyed, as a network drop), and the client re-attaches from the
// last seq it delivered. Text comes whole and once, a tool or approval in flight is answered
// once, another client can take the session over, and a dead network ends in reconnect_timeout.
// It reads flat responses from a server whose default format is the envelope.
import type { SessionEvent, SessionStatus } from "@roz/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../support/server.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { clients, readUntil, script, seqProblem, slowAnswer, slowText } from "./support.ts";

let server: TestServer;
let proxy: TcpProxy;
const made = clients();
beforeAll(async () => {
  server = await startServer({
    ROZ_PERMISSION_RULES: JSON.stringify([{ tool_pattern: "delete_*", policy: "require_confirmation", reason: "deletes files" }]),
  });
  proxy = await startTcpProxy(server.url);
});
afterAll(async () => {
  made.closeAll();
  await proxy?.close();
  await server?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const textOf = (events: readonly SessionEvent[], messageId: string): string =>
  events.map((e) => (e.type === "text_delta" && e.messageId === messageId ? e.content : "")).join("");

describe.each(["grpc", "connect"] as const)("over %s through a proxy that is cut", (transport) => {
  it("three cuts in one turn: the turn's text is whole, every event comes once, the session goes back to live", async () => {
    const roz = made.make(proxy.url, transport);
    const session = await roz.startSession();
    const statuses: SessionStatus[] = [];
    session.onStatus((s) => statuses.push(s));
    const all = readUntil(session.events, (ev) => ev.type === "turn_complete");
    const turn = session.send(slowAnswer(24, 60), { messageId: "long" });
    await readUntil(turn, (ev) => ev.type === "text_delta");
    for (let i = 0; i < 3; i++) {
      expect(proxy.cut()).toBeGreaterThan(0);
      await sleep(350);
    }
    const result = await turn.done;
    expect(result.text).toBe(slowText(24));
    const events = await all;
    expect(seqProblem(events)).toBeUndefined();
    expect(textOf(events, "long")).toBe(slowText(24));
    expect(statuses.filter((s) => s === "reconnecting").length).toBeGreaterThanOrEqual(3);
    expect(session.status).toBe("live");
    expect((await session.run("still there?")).text).toBe("You said: still there?");
    await session.close();
  });

  it("a tool result and an approval lost in a cut are sent again when the server asks again; each runs once", async () => {
    const roz = made.make(proxy.url, transport);
    let runs = 0;
    let asked = 0;
    const session = await roz.startSession({
      tools: {
        // Each cuts the connection before its answer can go out on it.
        read_file: {
          description: "Read",
          run: () => {
            runs++;
            proxy.cut();
            return "read it";
          },
        },
        delete_file: { description: "Delete", run: () => "deleted" },
      },
      onApproval: () => {
        asked++;
        proxy.cut();
        return true;
      },
    });
    const turn = session.send(
      script([
        [{ tool_call: { id: "t1", name: "read_file", arguments: {} } }],
        [{ tool_call: { id: "t2", name: "delete_file", arguments: {} } }],
        [{ text: "all done" }],
      ]),
    );
    const events: SessionEvent[] = [];
    for await (const ev of turn) events.push(ev);
    expect((await turn.done).text).toBe("all done");
    expect([runs, asked]).toEqual([1, 1]);
    expect(events.filter((e) => e.type === "tool_finished").map((e) => e.type === "tool_finished" && [e.toolCallId, e.result])).toEqual([
      ["t1", "read it"],
      ["t2", "deleted"],
    ]);
    expect(events.some((e) => e.type === "error")).toBe(false); // no answer was sent twice (unknown_tool_call)
    await session.close();
  });
});

describe("another client takes over", () => {
  it("a tool call left open by a client that went away is answered by the next one; a later reader replays without running it again", async () => {
    const first = made.make(proxy.url, "grpc");
    const session = await first.startSession({ tools: { lookup: { description: "Look up", run: () => new Promise(() => undefined) } } });
    const turn = session.send(script([[{ tool_call: { id: "l1", name: "lookup", arguments: { q: "x" } } }], [{ text: "found it" }]]));
    await readUntil(turn, (ev) => ev.type === "tool_request");
    session.detach();
    expect(session.status).toBe("detached");

    let runs = 0;
    const second = made.make(server.url, "connect");
    const again = await second.attachSession(session.id, {
      afterSeq: 0,
      tools: {
        lookup: {
          description: "Look up",
          run: () => {
            runs++;
            return "the answer";
          },
        },
      },
    });
    const events = await readUntil(again.events, (ev) => ev.type === "turn_complete");
    expect(runs).toBe(1);
    expect(events[0]).toMatchObject({ type: "session_started", seq: 1 });
    expect(seqProblem(events)).toBeUndefined();
    expect(textOf(events, turn.messageId)).toBe("found it");

    let rerun = 0;
    const third = made.make(server.url, "grpc-web");
    const reader = await third.attachSession(session.id, {
      tools: {
        lookup: {
          description: "Look up",
          run: () => {
            rerun++;
            return "again";
          },
        },
      },
    });
    expect(reader.pending().toolCalls).toEqual([]);
    const replayed = await readUntil(reader.events, (ev) => ev.type === "turn_complete");
    expect(replayed.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
    expect(rerun).toBe(0);
    await again.close();
    await reader.closed;
    expect(reader.status).toBe("ended");
  });

  it("no network for longer than reconnectTimeoutMs: the session fails with reconnect_timeout", async () => {
    const cutOff = await startTcpProxy(server.url);
    const roz = made.make(cutOff.url, "grpc", 800);
    const session = await roz.startSession();
    const turn = session.send(slowAnswer(40, 50));
    await readUntil(turn, (ev) => ev.type === "text_delta");
    await cutOff.close();
    await expect(turn.done).rejects.toMatchObject({ code: "reconnect_timeout", retryable: true });
    expect(session.status).toBe("failed");
    expect(session.error?.code).toBe("reconnect_timeout");
  });
});

describe("a server whose default event format is the envelope", () => {
  it("still sends this client flat responses (it asks for them with roz-event-format)", async () => {
    const envelope = await startServer({ ROZ_EVENT_FORMAT: "envelope" });
    try {
      const roz = made.make(envelope.url, "connect");
      const session = await roz.startSession();
      expect((await session.run("hello")).text).toBe("You said: hello");
      await session.close();
    } finally {
      await envelope.close();
    }
  });
});
