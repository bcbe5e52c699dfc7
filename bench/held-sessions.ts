/**
 * Commands of the clients child (load-child.ts) for the re-attach after a node loss
 * (section `cluster`): sessions held open, idle or mid-turn; each whose stream breaks
 * re-attaches at once with `resume{session_id, after_seq}` and a ping behind it, as a
 * client's retry loop would: while the dead owner still counts as alive the attempt is
 * refused with UNAVAILABLE and retried after a short pause. The time of each re-attached
 * stream's first response is taken on the machine's monotonic clock, so the driver can
 * subtract the moment it killed the node.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { SessionResponse } from "../src/gen/roz/v1/agent_pb.js";
import { type AgentClient, type BenchStream, connectClients, expect, openStream, ping, startSession, userMessage } from "./client.ts";
import { mapLimit, monoMs, sleep, within } from "./support.ts";

const RETRY_PAUSE_MS = 100;
const ATTEMPT_TIMEOUT_MS = 15_000;
const MAX_ATTEMPTS = 300;

/** What one re-attach took. */
export interface Reattached {
  sessionId: string;
  /** Monotonic ms of the first response of the stream that was accepted. */
  firstAt: number;
  /** Its case (`error:<code>` for an error): `error:interrupted` (the cut turn) for a session mid-turn, `pong` for an idle one. */
  first: string;
  attempts: number;
}

interface Held {
  sessionId: string;
  client: AgentClient;
  stream: BenchStream;
  /** Resolves once the stream read a text delta. */
  delta: Promise<void>;
  /** A turn runs (`startTurns`): its re-attach is answered by the cut turn's error. */
  midTurn: boolean;
  reattached: Promise<Reattached | undefined>;
}

const statusOf = (err: unknown): Code => ConnectError.from(err).code;

/** Reads the rest of a stream; resolves with its error code (undefined: it ended OK). */
async function drain(stream: BenchStream): Promise<Code | undefined> {
  try {
    while ((await stream.next()) !== undefined) {
      // not needed
    }
    return undefined;
  } catch (err) {
    return statusOf(err);
  }
}

/** One attempt: the first response of the resumed stream, or undefined when refused as retryable. */
async function attempt(stream: BenchStream): Promise<SessionResponse | undefined> {
  let first: SessionResponse | undefined;
  try {
    first = await stream.next();
  } catch (err) {
    if (statusOf(err) === Code.Unavailable) return undefined;
    throw err;
  }
  if (first === undefined) throw new Error("the re-attached stream ended without a response");
  const r = first.response;
  if (r.case !== "error" || r.value.code === "interrupted") return first;
  // An in-band error other than the cut turn's is a refusal only when UNAVAILABLE follows.
  const status = await drain(stream);
  if (status === Code.Unavailable) return undefined;
  throw new Error(`re-attach refused: ${r.value.code}: ${r.value.message} (status ${status === undefined ? "OK" : Code[status]})`);
}

export function heldSessions() {
  let conn: ReturnType<typeof connectClients> | undefined;
  let held: Held[] = [];
  const open = new Set<BenchStream>();
  let released = false;

  const reattach = async ({ client, sessionId, midTurn }: Held, afterSeq: bigint): Promise<Reattached> => {
    for (let n = 1; n <= MAX_ATTEMPTS; n++) {
      const stream = openStream(client);
      open.add(stream);
      stream.send({ request: { case: "resume", value: { sessionId, afterSeq } } });
      // An idle session sends nothing by itself: a ping shows the stream is attached.
      if (!midTurn) stream.send(ping);
      const first = await within(attempt(stream), ATTEMPT_TIMEOUT_MS, "re-attach attempt").catch((err: unknown) => {
        if (err instanceof Error && err.message.startsWith("re-attach attempt")) return undefined;
        throw err;
      });
      if (first !== undefined) {
        const firstAt = monoMs();
        void drain(stream);
        const r = first.response;
        return { sessionId, firstAt, first: r.case === "error" ? `error:${r.value.code}` : (r.case ?? "none"), attempts: n };
      }
      stream.abort();
      open.delete(stream);
      if (released) throw new Error("released");
      await sleep(RETRY_PAUSE_MS);
    }
    throw new Error(`${sessionId}: no node took the session after ${MAX_ATTEMPTS} attempts`);
  };

  /** Reads a held stream; once it breaks, re-attaches after the last seq it read. */
  const watch = async (h: Held, delta: () => void): Promise<Reattached | undefined> => {
    try {
      for (let r = await h.stream.next(); r !== undefined; r = await h.stream.next()) if (r.response.case === "textDelta") delta();
    } catch {
      // broken: re-attach
    }
    if (released) return undefined;
    return reattach(h, h.stream.lastSeq());
  };

  const pickHeld = (sessionIds: readonly string[]): Held[] => {
    const ids = new Set(sessionIds);
    const mine = held.filter((h) => ids.has(h.sessionId));
    if (mine.length !== ids.size) throw new Error("unknown session ids");
    return mine;
  };

  const release = async (): Promise<void> => {
    released = true;
    for (const s of open) s.abort();
    open.clear();
    await Promise.allSettled(held.map((h) => h.reattached));
    held = [];
    conn?.close();
    conn = undefined;
  };

  return {
    release,
    handlers: {
      /**
       * Starts `sessions` sessions on `serverUrl`, spread over `connections`, each with one
       * completed turn (the fake must have a reply planned for each): only a session that
       * stored its state can be adopted by another node.
       */
      hold: async (r: Record<string, unknown>): Promise<{ sessionIds: string[] }> => {
        await release();
        released = false;
        const c = connectClients(r.serverUrl as string, r.connections as number);
        conn = c;
        held = await mapLimit(r.sessions as number, 20, async (i) => {
          const client = c.clients[i % c.clients.length] as AgentClient;
          const { stream, sessionId } = await startSession(client, { model: r.model as string });
          open.add(stream);
          stream.send(userMessage("first"));
          await expect(stream, "turnComplete");
          let delta = (): void => undefined;
          const h: Held = {
            sessionId,
            client,
            stream,
            delta: new Promise<void>((resolve) => (delta = resolve)),
            midTurn: false,
            reattached: Promise.resolve(undefined),
          };
          h.reattached = watch(h, delta);
          // A failure is reported by `reattached`; until asked, it must not go unhandled.
          h.reattached.catch(() => undefined);
          return h;
        });
        return { sessionIds: held.map((h) => h.sessionId) };
      },
      /** Starts a turn on each of `sessionIds`; resolves once each streamed its first delta. */
      startTurns: async (r: Record<string, unknown>): Promise<void> => {
        const mine = pickHeld(r.sessionIds as string[]);
        for (const h of mine) {
          h.midTurn = true;
          h.stream.send(userMessage("go"));
        }
        await within(Promise.all(mine.map((h) => h.delta)), 15_000, "first delta of the held turns");
      },
      /** Waits until each of `sessionIds` (their streams broke) was re-attached. */
      reattached: async (r: Record<string, unknown>): Promise<Reattached[]> => {
        const done = await Promise.all(pickHeld(r.sessionIds as string[]).map((h) => h.reattached));
        return done.map((d) => {
          if (d === undefined) throw new Error("released before re-attached");
          return d;
        });
      },
      release,
    },
  };
}
