/**
 * Concurrent sessions doing turn after turn against a real server over gRPC (grpc-js),
 * recording what the clients saw, until the server goes away. Made to be killed: a stream
 * that ends after `expectEnd()` is the expected outcome, before it a problem.
 */
import type { SessionResponse } from "../../../src/gen/roz/v1/agent_pb.js";
import { type SessionClient, sessionClientFactory } from "../../support/session-client.ts";
import { rq, show, startSession, tool } from "../../support/session-protocol.ts";
import { LOOKUP_TOOL, type PlannedTurn, planTurn, type Usage } from "./scripted-turns.ts";

/** A `turn_complete` as the client received it. */
export interface SeenTurn {
  messageId: string;
  usage: Usage;
  stopReason: string;
}

/** One session of the workload, as its client saw it. */
export interface SessionLog {
  sessionId: string;
  /** `clean`: ended by the client (half-close) before the kill; `killed`: running when the server died. */
  kind: "clean" | "killed";
  /** Turns sent, in order (the last one may have been cut by the kill). */
  planned: PlannedTurn[];
  /** `turn_complete`s received, in order. */
  seen: SeenTurn[];
  /** Anything unexpected the client saw (in-band errors, timeouts, an early end). */
  problems: string[];
}

export interface WorkloadOptions {
  /** Sessions that run until the kill (default 4). */
  sessions?: number;
  /** Turns of the extra session that ends cleanly first (default 2). */
  cleanTurns?: number;
  /** Prefix of message ids, unique per round. */
  tag: string;
}

export interface Workload {
  readonly logs: SessionLog[];
  /** `turn_complete`s seen so far over all sessions. */
  completed(): number;
  /** Sessions with a turn sent and its `turn_complete` not yet received. */
  inFlight(): number;
  /** Resolves once the clean session has ended (its RPC finished OK or not). */
  readonly cleanDone: Promise<void>;
  /** From now on the end of a stream is expected (the server is about to be killed). */
  expectEnd(): void;
  /** Resolves when every session's stream has ended; closes the clients. */
  settled(): Promise<void>;
}

const toUsage = (u: { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheCreationTokens: number } | undefined): Usage => ({
  input_tokens: u?.inputTokens ?? 0,
  output_tokens: u?.outputTokens ?? 0,
  cache_read_tokens: u?.cacheReadTokens ?? 0,
  cache_creation_tokens: u?.cacheCreationTokens ?? 0,
});

/** Starts the sessions (each on its own connection) and drives them in the background. */
export async function startWorkload(url: string, options: WorkloadOptions): Promise<Workload> {
  const factories: ReturnType<typeof sessionClientFactory>[] = [];
  let ending = false;
  const logs: SessionLog[] = [];
  const inFlight = new Set<SessionLog>();

  const open = async (kind: SessionLog["kind"]): Promise<{ client: SessionClient; log: SessionLog }> => {
    // One connection per session: the kill must cut several independent HTTP/2 connections.
    const factory = sessionClientFactory("grpc-js", url);
    factories.push(factory);
    const client = factory.open();
    const started = await startSession(client, { tools: [tool(LOOKUP_TOOL, { pure: true })], hostId: `durability-${kind}` });
    const log: SessionLog = { sessionId: started.sessionId, kind, planned: [], seen: [], problems: [] };
    logs.push(log);
    return { client, log };
  };

  /** Sends one planned turn and reads it to its `turn_complete`, answering the tool call. */
  const runTurn = async (client: SessionClient, log: SessionLog, turn: PlannedTurn): Promise<void> => {
    log.planned.push(turn);
    inFlight.add(log);
    client.send(rq.user(turn.content, { messageId: turn.messageId }));
    for (;;) {
      const response: SessionResponse = await client.next(20_000);
      const r = response.response;
      if (r.case === "toolRequest") {
        const answer = turn.tool?.result ?? "unexpected";
        if (r.value.toolName !== LOOKUP_TOOL || turn.tool === undefined) log.problems.push(`unexpected ${show(response)}`);
        // A small pause, so that kills also land while the server waits for a tool result.
        setTimeout(() => client.send(rq.toolResult(r.value.toolCallId, answer)), Math.floor(Math.random() * 25));
      } else if (r.case === "error") {
        log.problems.push(`in-band ${show(response)}`);
      } else if (r.case === "turnComplete") {
        inFlight.delete(log);
        log.seen.push({ messageId: r.value.messageId, usage: toUsage(r.value.usage), stopReason: r.value.stopReason });
        return;
      }
    }
  };

  const drive = async (client: SessionClient, log: SessionLog, turns: number): Promise<void> => {
    try {
      for (let k = 0; k < turns; k++) await runTurn(client, log, planTurn(`${options.tag}-${log.sessionId.slice(0, 8)}-t${k}`, k % 3 !== 0));
    } catch (err) {
      if (!ending) log.problems.push(`before the kill: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  const sessions = await Promise.all(Array.from({ length: options.sessions ?? 4 }, () => open("killed")));
  const running = sessions.map(({ client, log }) => drive(client, log, Number.POSITIVE_INFINITY).then(() => client.status));
  const clean = await open("clean");
  const cleanDone = (async () => {
    await drive(clean.client, clean.log, options.cleanTurns ?? 2);
    clean.client.end();
    const status = await clean.client.status;
    if (status.code !== 0) clean.log.problems.push(`clean end: status ${status.code} ${status.message}`);
  })();

  return {
    logs,
    completed: () => logs.reduce((n, log) => n + log.seen.length, 0),
    inFlight: () => inFlight.size,
    cleanDone,
    expectEnd: () => void (ending = true),
    async settled() {
      await Promise.all([...running, cleanDone]);
      for (const factory of factories) factory.close();
    },
  };
}
