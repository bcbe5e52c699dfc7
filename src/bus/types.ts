/**
 * The event bus contract: the in-memory bus implements it now, NATS JetStream later. Payloads
 * are opaque bytes (protobuf on this server); headers carry small routing facts.
 *
 * The model is JetStream's: one stream holds every subject; `publish` returns the message's
 * sequence in that stream (increasing, shared by all subjects). A subscription has ONE filter
 * subject (what Debian's nats-server 2.9 supports per consumer), starts at a stream sequence or
 * with new messages only, and delivers in stream order. Subjects are dot-separated tokens;
 * filters may use `*` (one token) and a final `>` (one or more tokens).
 */

/** One delivered message. */
export interface BusMessage {
  subject: string;
  /** The message's sequence in the stream (1-based). */
  seq: number;
  data: Uint8Array;
  headers: Readonly<Record<string, string>>;
}

/** Where a subscription starts: after a stream sequence (0 = from the first kept message), or new messages only. */
export type SubscribeFrom = { afterSeq: number } | "new";

export interface SubscribeOptions {
  from: SubscribeFrom;
  /**
   * Messages buffered for a slow reader before the oldest are dropped (a reader that needs
   * every message detects the gap by its own numbering and reads the store instead).
   */
  maxPending?: number;
}

/** An ordered, closable stream of messages. Iterating ends after `close()`. */
export interface Subscription extends AsyncIterable<BusMessage> {
  close(): void;
  /** How many messages were dropped because the reader fell behind. */
  readonly dropped: number;
  /** How many messages reached it so far (read, waiting or dropped). */
  readonly received: number;
  /**
   * Resolves once the start is fixed: every message published after this, by any process, is
   * delivered (a networked bus learns "new" from the server; what is published before may or may not be).
   */
  readonly ready: Promise<void>;
}

/** Answers requests on one subject (see `EventBus.serve`). */
export type RequestHandler = (data: Uint8Array, headers: Readonly<Record<string, string>>) => Promise<Uint8Array>;

/** A direct line's listener (see `EventBus.listen`): ready once other processes' sends reach it. */
export type Listener = Subscription;

export interface Responder {
  close(): void;
  /** Resolves once requests from other processes reach the handler (a networked bus's round trip). */
  readonly ready?: Promise<void>;
}

/** The bus's connection, for `/readyz` and `/metrics` (an embedded bus is always connected). */
export interface BusHealth {
  connected: boolean;
  /** Reconnections since the bus was opened. */
  reconnects: number;
  /** Why it is not connected. */
  error?: string;
}

export interface EventBus {
  /** Appends a message; resolves with its stream sequence once the bus has it. */
  publish(subject: string, data: Uint8Array, headers?: Record<string, string>): Promise<number>;
  subscribe(filter: string, options: SubscribeOptions): Subscription;
  /**
   * Sends one request to whoever serves `subject` (the node that owns something) and resolves
   * with its reply. Rejects with `RozError("unavailable")` when nobody serves it (then with
   * `details.noResponders`, see `isNoResponders`) or the reply takes longer than `timeoutMs`;
   * a handler's own RozError is passed on.
   */
  request(subject: string, data: Uint8Array, options?: { timeoutMs?: number; headers?: Record<string, string> }): Promise<Uint8Array>;
  /** Serves requests on `subject` until the responder is closed. */
  serve(subject: string, handler: RequestHandler): Responder;
  /**
   * A direct line, never stored: delivers to whoever listens on `subject` now, at most once, in
   * the sender's order (the relay of one live stream between nodes; its reader detects a lost
   * message by its own numbering and re-attaches from the store).
   */
  send(subject: string, data: Uint8Array, headers?: Record<string, string>): void;
  /** Receives what is `send` on `subject` (no wildcards) from now on; `seq` is 0. */
  listen(subject: string, options?: { maxPending?: number }): Listener;
  /** `memory` or `nats`. */
  readonly kind: string;
  /** The connection's state; absent on buses that cannot lose one. */
  health?(): BusHealth;
  /** Ends every subscription and responder. */
  close(): Promise<void>;
}

/** True for a request's rejection because nobody serves its subject (its server process is gone, not just slow). */
export const isNoResponders = (err: unknown): boolean =>
  typeof err === "object" && err !== null && (err as { details?: Record<string, unknown> }).details?.noResponders === true;
