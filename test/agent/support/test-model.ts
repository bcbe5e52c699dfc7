import {
  type FinishReason,
  type JsonObject,
  type ModelAdapter,
  type ModelEvent,
  type ModelRequest,
  type PlayerStep,
  playSteps,
  type ResolvedModel,
  type TokenUsage,
} from "../../../src/models/index.ts";

/**
 * A recorder around the scripted provider's step player (`playSteps`), for agent unit
 * tests: each call to `stream` plays the next script, beat by beat, exactly as written (no
 * estimated usage, no added finish). Beats are model events, or the player's program
 * steps: wait for a promise, hang until aborted, throw, or `reached` (a callback when the
 * consumer asks for what follows the previous beat: the previous event has been taken).
 * The player honours the request's AbortSignal the way a real adapter must; this class
 * adds only the per-call scripts and the record of what each call was asked and whether
 * its signal aborted.
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
      const beats = typeof script === "function" ? script(request) : script;
      yield* playSteps(beats.map(playerStep), signal);
    } finally {
      this.closed[index] = true;
      signal.removeEventListener("abort", onAbort);
      this.#endGate(index).open();
    }
  }
}

/** A beat as a player step: a model event is played exactly as it is. */
const playerStep = (beat: Beat): PlayerStep => ("type" in beat ? { event: beat } : beat);

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
