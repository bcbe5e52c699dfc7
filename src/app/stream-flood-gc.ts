import { performance } from "node:perf_hooks";
import type { Counter } from "prom-client";
import { type CollectGarbage, garbageCollector } from "../domain/index.ts";
import { floodHeapSizing, type HeapSizing, heapSpace, MajorMarkingWatch, type MarkingState } from "./v8-gc.ts";

export interface FloodLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface StreamFloodOptions {
  /** How often the young generation is collected while a flood lasts (ms); 0 turns this off. */
  intervalMs: number;
  /** New HTTP/2 streams, over all connections, within `windowMs` that make a flood. */
  streamsPerWindow?: number;
  windowMs?: number;
  /** Young-generation bytes in use from which a check collects. */
  youngBytes?: number;
  /** How long after its last flooded window a flood counts as over. */
  quietMs?: number;
  log?: FloodLogger;
  /** Counts the collections made. */
  collections?: Counter;
  /** Overrides V8's collector (tests). */
  collect?: CollectGarbage;
  /** Overrides whether a mark-compact's marking is under way (tests). */
  majorMarking?: MarkingState;
  /** Overrides how the heap is sized while a flood lasts (tests). */
  heapSizing?: HeapSizing;
}

/**
 * Keeps the garbage collector's pauses short, and the heap small, while HTTP/2 streams
 * arrive in a flood (rapid reset, tens of thousands of streams that never start). Each new
 * stream allocates some 10–100 KB that lives until the stream is gone:
 *
 * - V8's young-generation collection, when it falls in a flood, copies everything still
 *   alive (10–14 MB, 40–90 ms on two cores) while every client waits. Collecting the young
 *   generation whenever it holds `youngBytes` keeps each collection small (12–22 ms at worst,
 *   server alone under attack).
 * - Except while V8 marks for a mark-compact: a young collection requested then is not young;
 *   V8 finishes the marking in one pause instead (35–65 ms measured). Those are skipped.
 * - The young generation keeps its size (V8 would grow it to 128 MB, pages it keeps long
 *   after the flood).
 *
 * Outside floods V8 runs as it would.
 */
export class StreamFloodCollector {
  readonly #intervalMs: number;
  readonly #streamsPerWindow: number;
  readonly #windowMs: number;
  readonly #quietMs: number;
  readonly #youngBytes: number;
  readonly #log: FloodLogger | undefined;
  readonly #collections: Counter | undefined;
  readonly #collect: CollectGarbage | undefined;
  #windowStart = Number.NEGATIVE_INFINITY;
  #inWindow = 0;
  #lastFlooded = 0;
  readonly #majorMarking: MarkingState;
  readonly #heapSizing: HeapSizing;
  #timer: NodeJS.Timeout | undefined;
  #collected = 0;
  #watching = false;
  #stopped = false;

  constructor(options: StreamFloodOptions) {
    this.#intervalMs = options.intervalMs;
    this.#streamsPerWindow = options.streamsPerWindow ?? 100;
    this.#windowMs = options.windowMs ?? 100;
    this.#quietMs = options.quietMs ?? 1000;
    this.#youngBytes = options.youngBytes ?? 4 * 1024 * 1024;
    this.#log = options.log;
    this.#collections = options.collections;
    this.#collect = options.intervalMs > 0 ? (options.collect ?? garbageCollector()) : undefined;
    this.#majorMarking = options.majorMarking ?? new MajorMarkingWatch();
    this.#heapSizing = options.heapSizing ?? floodHeapSizing;
  }

  /** Whether collections are being made (a flood is on). */
  get active(): boolean {
    return this.#timer !== undefined;
  }

  /** Notes a new HTTP/2 stream (cheap: a clock read and a count). */
  noteStream(): void {
    if (this.#collect === undefined || this.#stopped) return;
    if (!this.#watching) {
      // From the first stream on: marking under way when a flood begins must be known too.
      this.#watching = true;
      this.#majorMarking.start();
    }
    const now = performance.now();
    if (now - this.#windowStart >= this.#windowMs) {
      this.#windowStart = now;
      this.#inWindow = 0;
    }
    if (++this.#inWindow < this.#streamsPerWindow) return;
    this.#lastFlooded = now;
    if (this.#timer === undefined) this.#start();
  }

  /** Ends a flood in progress and stops watching V8 for good (the server is closing). */
  stop(): void {
    this.#stopped = true;
    this.#endFlood();
    if (this.#watching) this.#majorMarking.stop();
    this.#watching = false;
  }

  #endFlood(): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#heapSizing.leave();
  }

  #start(): void {
    const collect = this.#collect as CollectGarbage;
    this.#collected = 0;
    this.#heapSizing.enter();
    this.#log?.warn(
      { streams: this.#inWindow, withinMs: this.#windowMs, collectEveryMs: this.#intervalMs },
      "HTTP/2 stream flood: collecting the young generation often while it lasts",
    );
    this.#timer = setInterval(() => {
      if (performance.now() - this.#lastFlooded > this.#quietMs) {
        this.#endFlood();
        this.#log?.info({ collections: this.#collected }, "HTTP/2 stream flood over");
        return;
      }
      // A young collection now would end the marking in one long pause.
      if (this.#majorMarking.marking || heapSpace("new_space").used < this.#youngBytes) return;
      collect({ type: "minor" });
      this.#collected++;
      this.#collections?.inc();
    }, this.#intervalMs);
    this.#timer.unref();
  }
}
