/** Helpers of the teams tests: scripted prompts, watchers and the checks every watch must pass. */
import { ConnectError, createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { AgentService, type TeamEvent } from "../../src/gen/roz/v1/agent_pb.js";
import { script } from "../conformance/support.ts";
import { type client, grpcTransport } from "../rest/support.ts";

export { script };

/** A worker prompt that answers `text` at once. */
export const says = (text: string, usage = { input_tokens: 10, output_tokens: 3 }): string => script([[{ text }, { usage }]]);

export interface Watch {
  /** Every event received, in order. */
  readonly events: TeamEvent[];
  /** Resolves when the call ended: undefined for OK, else its error. */
  readonly done: Promise<ConnectError | undefined>;
  /** Resolves once an event satisfying `match` arrived. */
  until(match: (e: TeamEvent) => boolean, timeoutMs?: number): Promise<TeamEvent>;
}

/** Runs WatchTeam over gRPC (connect-node, HTTP/2) and collects its events. */
export function watch(url: string, taskId: string, options: { key?: string; afterSeq?: bigint } = {}): Watch {
  const rpc = createClient(AgentService, grpcTransport(url, options.key));
  const events: TeamEvent[] = [];
  const waiters: (() => void)[] = [];
  const done = (async () => {
    try {
      for await (const e of rpc.watchTeam({ taskId, ...(options.afterSeq !== undefined ? { afterSeq: options.afterSeq } : {}) }, { timeoutMs: 60_000 })) {
        events.push(e);
        for (const w of waiters.splice(0)) w();
      }
      return undefined;
    } catch (err) {
      return ConnectError.from(err);
    } finally {
      for (const w of waiters.splice(0)) w();
    }
  })();
  let ended = false;
  void done.then(() => (ended = true));
  return {
    events,
    done,
    async until(match, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = events.find(match);
        if (found) return found;
        if (ended) throw new Error(`watch ended without the event; saw ${events.map((e) => e.event.case).join(", ")}`);
        if (Date.now() > deadline) throw new Error(`no such event within ${timeoutMs} ms; saw ${events.map((e) => e.event.case).join(", ")}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
    },
  };
}

/** A new environment whose sessions' models get the team tools (they are opt-in, §7); `body` adds fields. Its id. */
export async function teamsEnvironment(api: ReturnType<typeof client>, body: Record<string, unknown> = {}): Promise<string> {
  const env = await api.post("/v1/environments", { body: { name: `teams-${Date.now()}-${Math.random()}`, teams: { enabled: true }, ...body } });
  expect(env.status).toBe(201);
  return env.json.id as string;
}

/** The worker id of any team event. */
export const workerOf = (e: TeamEvent): string => (e.event.value as { workerId: string }).workerId;

/**
 * What every complete watch must show: seqs 1..n without gap, and per worker the lifecycle
 * order started → phases/tool calls/approvals → completed or failed → exited.
 */
export function expectCompleteLog(events: TeamEvent[]): void {
  expect(events.map((e) => Number(e.seq))).toEqual(events.map((_, i) => i + 1));
  for (const e of events) expect(e.time).toBeDefined();
  const byWorker = new Map<string, string[]>();
  for (const e of events) byWorker.set(workerOf(e), [...(byWorker.get(workerOf(e)) ?? []), e.event.case!]);
  for (const [worker, cases] of byWorker) {
    expect(cases[0], worker).toBe("workerStarted");
    expect(cases.at(-1), worker).toBe("workerExited");
    const end = cases.at(-2);
    expect(["workerCompleted", "workerFailed"], worker).toContain(end);
    const middle = cases.slice(1, -2);
    expect(
      middle.every((c) => ["workerPhase", "workerToolCall", "workerApprovalRequested", "workerApprovalResolved"].includes(c)),
      worker,
    ).toBe(true);
  }
}

/** Polls `GET /v1/tasks/{id}` until the task is no longer running. */
export async function settledTask(get: (path: string) => Promise<{ status: number; json: any }>, taskId: string, timeoutMs = 20_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reply = await get(`/v1/tasks/${taskId}`);
    expect(reply.status).toBe(200);
    if (reply.json.status !== "running") return reply.json;
    if (Date.now() > deadline) throw new Error(`task still running: ${JSON.stringify(reply.json)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
