import { abortError, sleep } from "../abort.ts";
import { ModelError } from "../model-error.ts";
import { generatedCallId } from "../tool-arguments.ts";
import { emptyUsage, type FinishReason, type ModelEvent, type TokenUsage } from "../types.ts";
import type { ScriptStep } from "./script.ts";

/**
 * A step the player runs: a script step (what a providers file or an inline script can
 * say), or one only a program can give: an exact model `event`, `wait` for a promise,
 * `hang` until aborted, `fail` with any error, or `reached`, a callback run when the
 * consumer asks for what follows the previous step (so the previous event was taken).
 */
export type PlayerStep = ScriptStep | { event: ModelEvent } | { wait: Promise<unknown> } | { hang: true } | { fail: unknown } | { reached: () => void };

/** How the player ends an answer like a provider does (the scripted provider); without it, it plays the steps only. */
export interface Completion {
  /** Input tokens to report (with `usage` merged in) when the steps report no usage. */
  inputTokens: number;
  usage?: Partial<TokenUsage>;
}

/**
 * Plays `steps` in order as model events, honouring `signal` the way an adapter must:
 * once it aborts, the stream ends with the abort error (never a ModelError), also in the
 * middle of a `delay_ms`, `wait` or `hang`. `text`/`thinking` are streamed as small deltas;
 * `error` throws a ModelError; a `finish` step ends the answer. With `complete`, an
 * answer without usage gets an estimated one, and every answer ends with a finish
 * (`tool_use` when it called tools).
 */
export async function* playSteps(steps: Iterable<PlayerStep>, signal: AbortSignal, complete?: Completion): AsyncGenerator<ModelEvent, void, undefined> {
  if (signal.aborted) throw abortError(signal);
  let outputChars = 0;
  let reportedUsage = false;
  let toolCalls = 0;
  let finish: FinishReason | undefined;

  for (const step of steps) {
    if (signal.aborted) throw abortError(signal);
    if ("text" in step || "thinking" in step) {
      const isText = "text" in step;
      const text = isText ? step.text : step.thinking;
      outputChars += text.length;
      for (const piece of pieces(text)) {
        if (signal.aborted) throw abortError(signal);
        yield isText ? { type: "text_delta", text: piece } : { type: "thinking_delta", text: piece };
      }
    } else if ("tool_call" in step) {
      const args = step.tool_call.arguments;
      outputChars += step.tool_call.name.length + JSON.stringify(args).length;
      toolCalls++;
      yield { type: "tool_call", id: step.tool_call.id ?? generatedCallId(), name: step.tool_call.name, arguments: args };
    } else if ("usage" in step) {
      reportedUsage = true;
      yield { type: "usage", usage: { ...emptyUsage(), ...step.usage } };
    } else if ("delay_ms" in step) {
      await sleep(step.delay_ms, signal);
    } else if ("error" in step) {
      throw new ModelError(step.error.message, {
        retryable: step.error.retryable,
        ...(step.error.status !== undefined ? { status: step.error.status } : {}),
      });
    } else if ("finish" in step) {
      finish = step.finish;
      break;
    } else if ("event" in step) {
      yield step.event;
    } else if ("wait" in step) {
      await untilAborted(step.wait, signal);
    } else if ("hang" in step) {
      await untilAborted(new Promise(() => undefined), signal);
    } else if ("fail" in step) {
      throw step.fail;
    } else {
      step.reached();
    }
  }

  if (!complete) return;
  if (signal.aborted) throw abortError(signal);
  if (!reportedUsage) {
    const estimated: TokenUsage = { ...emptyUsage(), inputTokens: complete.inputTokens, outputTokens: estimateTokens(outputChars) };
    yield { type: "usage", usage: { ...estimated, ...complete.usage } };
  }
  yield { type: "finish", reason: finish ?? (toolCalls > 0 ? "tool_use" : "end_turn") };
}

/** `promise`'s outcome, or the abort error as soon as `signal` aborts (the listener is always removed). */
function untilAborted(promise: Promise<unknown>, signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(abortError(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

/** Text as a stream of small deltas (a word and its trailing space each), like a real model. */
function pieces(text: string): string[] {
  return text.match(/\s*\S+\s*|\s+/g) ?? [];
}

/** Rough token count (~4 characters per token): good enough for budgets and tests. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}
