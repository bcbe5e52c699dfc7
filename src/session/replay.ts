import { RozError } from "../errors/index.ts";
import type { SessionPersistence } from "./ports.ts";
import type { LoggedEvent } from "./types.ts";

/** What a stream attaching after `afterSeq` must write before the live events. */
export interface AttachPlan {
  /** Still-open tool requests and approval requests at or before `afterSeq`, sent again (original seq and ids). */
  resent: LoggedEvent[];
  /** Kept responses older than the memory log: read `(afterSeq, beforeSeq)` from the store. */
  stored?: { afterSeq: number; beforeSeq: number };
  /** Kept responses after `afterSeq` still in memory; live events follow them. */
  memory: LoggedEvent[];
}

/** Stored events read per round trip while replaying. */
const REPLAY_PAGE = 1000;

/**
 * Replays a session's stored events in `(afterSeq, beforeSeq)` to `push`, page by page, in
 * seq order (§6 re-attach); stops early once `stopped()` says the stream is gone. Throws
 * `not_found` for an unknown session and `events_expired` when some are no longer kept.
 */
export async function replayStored(
  persistence: Pick<SessionPersistence, "readEvents">,
  tenantId: string,
  sessionId: string,
  range: { afterSeq: number; beforeSeq: number },
  push: (e: LoggedEvent) => void,
  stopped: () => boolean,
): Promise<void> {
  const { afterSeq, beforeSeq } = range;
  let after = afterSeq;
  for (;;) {
    const page = await persistence.readEvents(tenantId, sessionId, after, REPLAY_PAGE);
    if (!page) throw new RozError("not_found", `session "${sessionId}" not found`);
    if (page.prunedThrough > afterSeq) {
      throw new RozError(
        "events_expired",
        `events after seq ${afterSeq} are no longer kept (kept from ${page.prunedThrough + 1}); read the transcript over REST`,
      );
    }
    for (const e of page.events) {
      if (e.seq >= beforeSeq) return;
      push(e);
      after = e.seq;
    }
    if (page.events.length < REPLAY_PAGE || stopped()) return;
  }
}
