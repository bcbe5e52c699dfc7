import { RozError } from "../errors/index.ts";
import type { EventLog } from "./event-log.ts";
import type { Attachment } from "./fan-out.ts";
import type { LoggedEvent, SequencedEvent, SessionEvent } from "./types.ts";

/** Events with no flat (v0.2) variant that are not the session's last: see `#number`. */
const isEnvelopeOnly = (event: SessionEvent): boolean => event.type === "model_call_completed" || event.type === "approval_resolved";

/** Merged deltas are flushed at this many characters even within one tick. */
const MAX_MERGED_DELTA = 16_384;

type TurnComplete = Extract<SessionEvent, { type: "turn_complete" }>;

/** Where numbered events go. */
export interface SequencerOutput {
  /** A numbered event that is not kept (pong, keepalive, envelope-only): to `to`, else to every attached stream. */
  live(item: SequencedEvent, to?: Attachment): void;
  /** A kept event, numbered and in the log: to every attached stream. */
  kept(logged: LoggedEvent, event: SessionEvent): void;
  /** A kept event waits for the store: outside a turn it is written soon. */
  unstored(): void;
}

/**
 * The session's order (§6 seq): every response is numbered here, so every attached stream
 * sees the same order, and kept ones are encoded once (those bytes go to the log, the store
 * and the wire). Stream-local events (pong, keepalive) take a seq but are neither kept nor
 * replayed. While a turn is being stored, new events are held and numbered after its
 * `turn_complete`, so numbers stay in delivery order.
 */
export class Sequencer {
  readonly #sessionId: string;
  readonly #log: EventLog;
  readonly #encode: (event: SequencedEvent) => Uint8Array;
  readonly #out: SequencerOutput;
  #seq: number;
  /**
   * Rebuilt from the store and nothing numbered since: a client may have seen responses the
   * previous process never stored (the cut turn, keepalives), so any `after_seq` is accepted
   * and numbering continues after it; the seq jumps over what was lost.
   */
  #restoredUnnumbered: boolean;
  /** The delta being merged (see `emit`). */
  #pendingDelta: Extract<SessionEvent, { type: "text_delta" | "thinking_delta" }> | undefined;
  #flushScheduled = false;
  /** Events produced while a turn is being stored: delivered (and numbered) after its turn_complete. */
  #held: SessionEvent[] | undefined;
  /** The running turn's number: envelope streams see it on each of its events. */
  turnIndex: number | undefined;

  readonly #observe: ((event: SessionEvent) => void) | undefined;

  /** `observe` sees each event once, when it is numbered (held ones when they are released). */
  constructor(init: {
    sessionId: string;
    log: EventLog;
    encode: (event: SequencedEvent) => Uint8Array;
    out: SequencerOutput;
    lastSeq?: number;
    observe?: (event: SessionEvent) => void;
  }) {
    this.#sessionId = init.sessionId;
    this.#observe = init.observe;
    this.#log = init.log;
    this.#encode = init.encode;
    this.#out = init.out;
    this.#seq = init.lastSeq ?? 0;
    this.#restoredUnnumbered = init.lastSeq !== undefined;
  }

  /** The seq of the last numbered response (kept or stream-local). */
  get lastSeq(): number {
    return this.#seq;
  }

  /** Checks a re-attaching stream's `after_seq`: `invalid_argument` beyond the last seq (see `#restoredUnnumbered`). */
  admit(afterSeq: number): void {
    if (afterSeq > this.#seq && this.#restoredUnnumbered) this.#seq = afterSeq;
    if (afterSeq > this.#seq) throw new RozError("invalid_argument", `after_seq ${afterSeq} is beyond the session's last seq ${this.#seq}`);
  }

  /**
   * Numbers the event, keeps it, and hands it on. Consecutive deltas of one kind and message
   * are merged until the next tick (or the next other event): a provider's burst becomes one
   * message, not one per token.
   */
  emit(event: SessionEvent): void {
    if (event.type === "text_delta" || event.type === "thinking_delta") {
      const pending = this.#pendingDelta;
      if (pending?.type === event.type && pending.messageId === event.messageId && pending.text.length < MAX_MERGED_DELTA) {
        pending.text += event.text;
        return;
      }
      this.flush();
      this.#pendingDelta = { ...event };
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        setImmediate(() => {
          this.#flushScheduled = false;
          this.flush();
        });
      }
      return;
    }
    this.flush();
    this.#number(event);
  }

  /** A stream-local response (pong, keepalive): numbered in the session's order but not kept, for `to` only (every stream when absent). */
  emitLocal(event: SessionEvent, to?: Attachment): void {
    this.flush();
    if (this.#held) {
      this.#held.push(event);
      return;
    }
    this.#restoredUnnumbered = false;
    this.#out.live(this.#sequenced(++this.#seq, event), to);
  }

  /** Numbers the delta being merged, if any. */
  flush(): void {
    const pending = this.#pendingDelta;
    if (pending === undefined) return;
    this.#pendingDelta = undefined;
    this.#number(pending);
  }

  #number(event: SessionEvent): void {
    if (this.#held) {
      this.#held.push(event);
      return;
    }
    this.#observe?.(event);
    // What only the event envelope can say (a model call's figures, how an approval ended)
    // takes no number of its own: it goes out live with the seq of the event before it, so
    // flat (v0.2) streams, which have no variant for it, see no gap and no empty message.
    if (isEnvelopeOnly(event)) return this.#out.live(this.#sequenced(this.#seq, event));
    this.#restoredUnnumbered = false;
    const sequenced = this.#sequenced(++this.#seq, event);
    // Pongs and keepalives answer one stream: numbered, but never replayed.
    if (event.type === "pong" || event.type === "keepalive") return this.#out.live(sequenced);
    const logged = this.#logged(sequenced);
    this.#log.append(logged);
    this.#out.kept(logged, event);
    this.#out.unstored();
  }

  /** The event with what envelope streams need besides its seq: whose it is, when, and its turn. */
  #sequenced(seq: number, event: SessionEvent): SequencedEvent {
    const turn = this.turnIndex !== undefined ? { turnIndex: this.turnIndex } : {};
    return { seq, event, sessionId: this.#sessionId, at: Date.now(), ...turn };
  }

  /** A kept event, encoded once: the log keeps the event too (for envelope streams) while it is in memory. */
  #logged(sequenced: SequencedEvent): LoggedEvent {
    return { ...sequenced, bytes: this.#encode(sequenced) };
  }

  /** A turn's end, numbered next but not yet delivered: events wait until `release` (the turn is being stored). */
  hold(event: TurnComplete): LoggedEvent {
    this.flush();
    this.#held = [];
    return this.#logged(this.#sequenced(this.#seq + 1, event));
  }

  /**
   * Delivers the held turn end: as numbered when it was stored (it is in the store already),
   * else after a retryable `internal` error (it stays queued for the next write). Then the
   * events held meanwhile, which are outside the turn.
   */
  release(completed: LoggedEvent, event: TurnComplete, stored: boolean): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    if (stored) {
      this.#seq = completed.seq;
      this.#log.append(completed);
      this.#log.flushed(1);
      this.#out.kept(completed, event);
    } else {
      this.emit({ type: "session_error", code: "internal", message: "the turn could not be stored", retryable: true });
      this.emit(event);
    }
    this.turnIndex = undefined;
    for (const e of held) {
      if (e.type === "pong" || e.type === "keepalive") this.emitLocal(e);
      else this.emit(e);
    }
  }
}
