/**
 * Model events are pushed, not pulled: a provider's SSE reader hands each parsed event
 * straight to a sink, through every layer (conversion, retries, renaming, timing) down to
 * the agent, in one synchronous call chain per network read. A chain of async generators
 * costs a promise and a microtask per event per layer instead. `ModelAdapter.stream`
 * (the pull form) is kept for callers that iterate: it buffers the pushed events.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import type { ModelAdapter, ModelEvent, ModelEventSink, ModelRequest } from "./types.ts";

/** Longest stretch of event handling before a reader lets the event loop run. */
const YIELD_EVERY_MS = 2;

/** Turns of the event loop seen so far (counted only while some reader waits for a chunk). */
let loopTurns = 0;
let counting = false;
function countTurn(): void {
  loopTurns++;
  counting = false;
}

/** The current turn count, making sure the next turn is counted (one immediate for every reader). */
function watchTurns(): number {
  if (!counting) {
    counting = true;
    setImmediate(countTurn);
  }
  return loopTurns;
}

/**
 * Lets timers, writes and other sessions run now and then while a fast provider floods a
 * reader with chunks that are already buffered (they resolve as microtasks). A read during
 * which the event loop went round let everything else run, so only handling since the last
 * such read (or the last yield) counts: a paced stream never yields. A read that merely
 * waited behind other microtasks does not count as a turn, however long it took.
 */
export class Fairness {
  #busySince = performance.now();
  #turnAtRead = 0;

  /** Call before awaiting the next chunk. */
  reading(): void {
    this.#turnAtRead = watchTurns();
  }

  /** Call once it came. */
  received(): void {
    if (loopTurns !== this.#turnAtRead) this.#busySince = performance.now();
  }

  /** Call after handling it: a promise of the next event-loop turn once handling has gone on too long. */
  handled(): Promise<void> | undefined {
    if (performance.now() - this.#busySince <= YIELD_EVERY_MS) return undefined;
    return nextTurn().then(() => {
      this.#busySince = performance.now();
    });
  }
}

/**
 * The pull form of a push producer: what `produce` pushes is buffered and yielded in
 * order; its rejection is thrown after the buffered items. A consumer that stops early
 * (`break`) aborts the signal `produce` got, and nothing is yielded after it. With
 * `until`, nothing buffered is yielded once that signal aborted either.
 */
export function pullEvents<T>(produce: (sink: (item: T) => void, stop: AbortSignal) => Promise<void>, until?: AbortSignal): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const items: T[] = [];
      let head = 0;
      let ended = false;
      let failure: { error: unknown } | undefined;
      let wake: (() => void) | undefined;
      const stop = new AbortController();
      const notify = (): void => {
        const w = wake;
        wake = undefined;
        w?.();
      };
      produce((item) => {
        if (stop.signal.aborted) return;
        items.push(item);
        notify();
      }, stop.signal).then(
        () => {
          ended = true;
          notify();
        },
        (error: unknown) => {
          ended = true;
          failure = { error };
          notify();
        },
      );
      const done = (): IteratorReturnResult<undefined> => {
        items.length = 0;
        head = 0;
        return { done: true, value: undefined };
      };
      return {
        async next(): Promise<IteratorResult<T>> {
          for (;;) {
            if (stop.signal.aborted) return done();
            if (until?.aborted) {
              // Not the consumer's any more; the producer's own end (or failure) still comes.
              items.length = 0;
              head = 0;
            }
            if (head < items.length) {
              const value = items[head++] as T;
              if (head === items.length) {
                items.length = 0;
                head = 0;
              }
              return { done: false, value };
            }
            if (ended) {
              if (failure) throw failure.error;
              return done();
            }
            await new Promise<void>((resolve) => (wake = resolve));
          }
        },
        async return(): Promise<IteratorResult<T>> {
          stop.abort();
          notify();
          return done();
        },
      };
    },
  };
}

/** Pushes everything `events` yields into `sink`, giving the event loop its turn now and then. */
export async function drain<T>(events: AsyncIterable<T>, sink: (item: T) => void, stop?: AbortSignal): Promise<void> {
  const fairness = new Fairness();
  const it = events[Symbol.asyncIterator]();
  // As `for await`: a source that failed is not closed; one that is left is.
  for (;;) {
    fairness.reading();
    const next = await it.next();
    fairness.received();
    if (next.done === true) return;
    if (stop?.aborted) {
      await it.return?.();
      return;
    }
    try {
      sink(next.value);
    } catch (err) {
      await Promise.resolve(it.return?.()).catch(() => undefined);
      throw err;
    }
    await fairness.handled();
  }
}

/**
 * Runs one model call with its events pushed into `sink` (which must not throw): through
 * the adapter's `streamTo` when it has one, else by iterating its `stream` (closed at its
 * next event once the request's signal aborted).
 */
export function pushEvents(adapter: ModelAdapter, request: ModelRequest, sink: ModelEventSink): Promise<void> {
  return adapter.streamTo ? adapter.streamTo(request, sink) : drain(adapter.stream(request), sink, request.signal);
}

/**
 * `ModelAdapter.stream` of an adapter that pushes: a consumer that stops early aborts the
 * call's HTTP request (through the signal the call gets). Once the request's own signal
 * aborted, events still buffered are not the caller's any more: the next read throws the
 * abort, however many chunks arrived before it.
 */
export function streamOf(streamTo: (request: ModelRequest, sink: ModelEventSink) => Promise<void>, request: ModelRequest): AsyncIterable<ModelEvent> {
  return pullEvents((sink, stop) => streamTo({ ...request, signal: AbortSignal.any([request.signal, stop]) }, sink), request.signal);
}
