// @roz/client and teams (session-behaviour.md §7): a session's agent spawns a worker whose client
// tool call runs through the session's tools; watchTeam replays and tails the task's events,
// each once and in order, from the start or after a seq, and ends with the task.
import type { TeamEvent, ToolCall } from "@roz/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../support/server.ts";
import { startTcpProxy } from "../support/tcp-proxy.ts";
import { clients, readUntil, script } from "./support.ts";

let server: TestServer;
const made = clients();
beforeAll(async () => {
  server = await startServer({ ROZ_TEAMS_DEFAULT: "on" });
});
afterAll(async () => {
  made.closeAll();
  await server?.close();
});

async function collect(events: AsyncIterable<TeamEvent>): Promise<TeamEvent[]> {
  const out: TeamEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

describe.each(["grpc", "connect"] as const)("watchTeam over %s", (transport) => {
  it("a worker's tool call runs through the session's tools; the task's events come once, in order, from the start or after a seq", async () => {
    const roz = made.make(server.url, transport);
    const calls: ToolCall[] = [];
    const session = await roz.startSession({
      tools: {
        read_file: {
          description: "Read a file",
          run: (_args: unknown, call: ToolCall) => {
            calls.push(call);
            return "file text";
          },
        },
      },
    });
    const worker = script([[{ tool_call: { id: "r1", name: "read_file", arguments: { path: "a" } } }], [{ text: "the worker read it" }]]);
    const turn = session.send(
      script([
        [{ tool_call: { id: "s1", name: "spawn_worker", arguments: { prompt: worker } } }],
        [{ tool_call: { id: "w1", name: "wait_for_workers", arguments: {} } }],
        [{ text: "the team is done" }],
      ]),
    );
    const [started] = (await readUntil(turn, (ev) => ev.type === "team_started")).filter((ev) => ev.type === "team_started");
    const taskId = started?.type === "team_started" ? started.taskId : "";
    const live = collect(roz.watchTeam(taskId));
    expect((await turn.done).text).toBe("the team is done");
    // A session's task lasts as long as the session (its agent may spawn more workers).
    await session.close();
    const events = await live;
    expect(events.map((e) => e.type)).toEqual(["worker_started", "worker_phase", "worker_tool_call", "worker_phase", "worker_completed", "worker_exited"]);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(events.every((e) => e.time instanceof Date)).toBe(true);
    expect(events.find((e) => e.type === "worker_completed")).toMatchObject({ result: "the worker read it" });
    expect(calls).toEqual([{ toolCallId: expect.stringMatching(/\/r1$/), toolName: "read_file", workerId: expect.any(String) }]);

    const later = await collect(roz.watchTeam(taskId, { afterSeq: 4 }));
    expect(later.map((e) => e.seq)).toEqual([5, 6]);
  });
});

describe("watchTeam through a proxy that is cut", () => {
  it("re-opens the stream after the last seq it delivered: the same events as a direct watcher, each once", async () => {
    const proxy = await startTcpProxy(server.url);
    try {
      const direct = made.make(server.url, "grpc");
      const cut = made.make(proxy.url, "grpc");
      const session = await direct.startSession();
      const slowWorker = script([[{ text: "step one" }, { delay_ms: 400 }, { text: " step two" }, { delay_ms: 400 }, { text: " done" }]]);
      const turn = session.send(
        script([
          [{ tool_call: { id: "s1", name: "spawn_worker", arguments: { prompt: slowWorker } } }],
          [{ tool_call: { id: "w1", name: "wait_for_workers", arguments: {} } }],
          [{ text: "ok" }],
        ]),
      );
      const [started] = (await readUntil(turn, (ev) => ev.type === "team_started")).filter((ev) => ev.type === "team_started");
      const taskId = started?.type === "team_started" ? started.taskId : "";
      const reference = collect(direct.watchTeam(taskId));
      const seen: TeamEvent[] = [];
      const watching = (async () => {
        for await (const e of cut.watchTeam(taskId)) {
          seen.push(e);
          if (seen.length === 1) proxy.cut();
        }
      })();
      await turn.done;
      await session.close();
      await watching;
      const all = await reference;
      expect(all.length).toBeGreaterThan(2);
      expect(seen.map((e) => e.seq)).toEqual(all.map((e) => e.seq));
      expect(proxy.accepted).toBeGreaterThan(1);
    } finally {
      await proxy.close();
    }
  });
});
