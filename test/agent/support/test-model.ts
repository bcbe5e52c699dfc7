import type { FinishReason, JsonObject, ModelAdapter, ModelEvent, ModelRequest, ResolvedModel, TokenUsage } from "../../../src/models/index.ts";

/**
 * A test double for the *model* (not for the agent under test): each call to `stream`
 * plays the next script, beat by beat. Beats are model events, or instructions: wait for
 * a promise, hang until aborted, throw. Every wait honours the request's AbortSignal the
 * way a real adapter must (it throws an AbortError), and the double records what it was
 * asked and whether each call saw its signal abort. A `reached` beat calls back when the
 * consumer asks for what follows the previous beat: the previous event has been taken.
 */
export type Beat = ModelEvent | { wait: Promise<unknown> } | { hang: true } | { fail: unknown } | { reached: () => void };
export type Script = Beat[] | ((request: ModelRequest) => Beat[]);

/** What one call asked for (signal left out; messages deep-copied at call time). */
export type SeenRequest = Omit<ModelRequest, "signal">;

export class TestModel implements ModelAdapter {
  readonly provider = "test";
  readonly requests: SeenRequest[] = [];
  /** Per call: whether its signal fired while the call was open. */
  readonly aborted: boolean[] = [];
  /** Per call: whether the stream was finished or closed by the consumer. */
  readonly closed: boolean[] = [];
  readonly #ended: { promise: Promise<void>; open: () => void }[] = [];
  #scripts: Script[];

  constructor(scripts: Script[] = []) {
    this.#scripts = [...scripts];
  }

  /** Appends scripts for later calls. */
  add(...scripts: Script[]): void {
    this.#scripts.push(...scripts);
  }

  get calls(): number {
    return this.requests.length;
  }

  /** Resolves once call `index` (0-based) has ended: finished, failed, aborted or closed by its consumer. */
  ended(index: number): Promise<void> {
    return this.#endGate(index).promise;
  }

  #endGate(index: number): { promise: Promise<void>; open: () => void } {
    return (this.#ended[index] ??= gate());
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const index = this.requests.length;
    const { signal, ...rest } = request;
    this.requests.push(structuredClone(rest));
    this.aborted[index] = signal.aborted;
    this.closed[index] = false;
    const onAbort = (): void => {
      this.aborted[index] = true;
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      const script = this.#scripts[index];
      if (script === undefined) throw new Error(`TestModel: no script for call ${index + 1}`);
      for (const beat of typeof script === "function" ? script(request) : script) {
        signal.throwIfAborted();
        if ("wait" in beat) await untilAborted(beat.wait, signal);
        else if ("hang" in beat) await untilAborted(new Promise(() => undefined), signal);
        else if ("fail" in beat) throw beat.fail;
        else if ("reached" in beat) beat.reached();
        else yield beat;
      }
    } finally {
      this.closed[index] = true;
      signal.removeEventListener("abort", onAbort);
      this.#endGate(index).open();
    }
  }
}

function untilAborted(promise: Promise<unknown>, signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason instanceof Error ? signal.reason : new DOMException("aborted", "AbortError"));
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/** A ResolvedModel around a TestModel. */
export function resolved(adapter: ModelAdapter, options: { supportsImages?: boolean } = {}): ResolvedModel {
  return { name: "test/model", modelId: "model", adapter, supportsImages: options.supportsImages ?? false };
}

// Event builders, to keep scripts short.
export const text = (t: string): ModelEvent => ({ type: "text_delta", text: t });
export const thinking = (t: string, signature?: string): ModelEvent =>
  signature === undefined ? { type: "thinking_delta", text: t } : { type: "thinking_delta", text: t, signature };
export const call = (id: string, name: string, args: JsonObject = {}): ModelEvent => ({ type: "tool_call", id, name, arguments: args });
export const finish = (reason: FinishReason = "end_turn"): ModelEvent => ({ type: "finish", reason });
export const usage = (inputTokens: number, outputTokens: number, cacheReadTokens = 0, cacheCreationTokens = 0): ModelEvent => ({
  type: "usage",
  usage: { inputTokens, outputTokens, cacheReadTokens, cacheCreationTokens } satisfies TokenUsage,
});

/** A script that answers with text and ends the turn. */
export const reply = (t: string): Beat[] => [text(t), usage(10, 5), finish("end_turn")];
/** A script that asks for tool calls. */
export const toolCalls = (...calls: ModelEvent[]): Beat[] => [...calls, usage(10, 5), finish("tool_use")];

/** A promise with its resolver, for `wait` beats. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
