/** Helpers of the @roz/client tests: scripted prompts, the three transports, reading events. */
import { RozClient, type SessionEvent, type TransportKind } from "@roz/client";
import { script } from "../conformance/support.ts";

export { script };

export const transports: readonly TransportKind[] = ["grpc", "connect", "grpc-web"];

/** A slow answer: `words` text deltas `gapMs` apart (the turn runs about words × gapMs). */
export const slowAnswer = (words: number, gapMs: number, prefix = "w"): string =>
  script([Array.from({ length: words }, (_, i) => [{ text: `${prefix}${i} ` }, { delay_ms: gapMs }]).flat()]);

/** The text a slow answer of `words` words streams. */
export const slowText = (words: number, prefix = "w"): string => Array.from({ length: words }, (_, i) => `${prefix}${i} `).join("");

/** Clients made by a test file, closed together. */
export function clients(): { make(baseUrl: string, transport: TransportKind, reconnectTimeoutMs?: number): RozClient; closeAll(): void } {
  const made: RozClient[] = [];
  return {
    make(baseUrl, transport, reconnectTimeoutMs) {
      const c = new RozClient({ baseUrl, transport, ...(reconnectTimeoutMs ? { reconnectTimeoutMs } : {}) });
      made.push(c);
      return c;
    },
    closeAll: () => {
      for (const c of made.splice(0)) c.close();
    },
  };
}

/** Reads `events` until `until` matches (included) or they end. */
export async function readUntil(events: AsyncIterable<SessionEvent>, until: (ev: SessionEvent) => boolean): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  for await (const ev of events) {
    out.push(ev);
    if (until(ev)) break;
  }
  return out;
}

/** Seqs that go up strictly, each once: what a client must deliver whatever happened to its connection. */
export function seqProblem(events: readonly SessionEvent[]): string | undefined {
  for (let i = 1; i < events.length; i++) {
    const [a, b] = [events[i - 1] as SessionEvent, events[i] as SessionEvent];
    if (b.seq <= a.seq) return `seq ${b.seq} (${b.type}) after ${a.seq} (${a.type})`;
  }
  return undefined;
}
