import { foldByFirstItem } from "../../domain/index.ts";
import { abortError } from "../abort.ts";
import { ModelError } from "../model-error.ts";
import type { ModelAdapter, ModelEvent, ModelMessage, ModelRequest, TokenUsage } from "../types.ts";
import { estimateTokens, playSteps } from "./player.ts";
import { inlineScriptText, latestUserText, parseScript, ScriptError, type Script, type ScriptStep, stepsOf } from "./script.ts";

/** The model name of the built-in echo (also what `scripted` falls back to). */
export const defaultScriptedModel = "default";

/** The model ids a scripted provider with these named scripts answers to: `default` and each script. */
export function scriptedModelIds(scriptNames: Iterable<string>): string[] {
  return [...new Set([defaultScriptedModel, ...scriptNames])];
}

/**
 * The `scripted` provider: a model double that needs no network and no key. It is the
 * offline default and what tests and client developers use to get exact, repeatable
 * model behaviour through the real session machinery. See `README.md` next to this file.
 *
 * Which script plays, for a request:
 * 1. an inline script in the latest user text message (`script: {…}` or a ```script fence);
 * 2. else the named script `request.model` from the providers file;
 * 3. else (model `default`) the echo: a little thinking, then `You said: <text>`.
 *
 * The call index k is the number of assistant messages after that user message, so the
 * provider keeps no state: the k-th call plays `responses[k]`, and calls beyond the last
 * response answer an empty `end_turn`; a response with `ok` and `failed` plays `failed` when
 * the request ends with an error tool result (a denial too). Steps run in order; `delay_ms` waits (abortable),
 * `error` throws a ModelError with the given `retryable`/`status` (no retries are made
 * here, so clients see it at once). Usage is the script's, else estimated at about four
 * characters per token.
 */
export class ScriptedModel implements ModelAdapter {
  readonly provider: string;
  readonly #scripts: ReadonlyMap<string, Script>;

  constructor(options: { provider?: string; scripts?: Record<string, Script> } = {}) {
    this.provider = options.provider ?? "scripted";
    this.#scripts = new Map(Object.entries(options.scripts ?? {}));
  }

  /** The model ids this provider answers to: `default` and every named script. */
  models(): string[] {
    return scriptedModelIds(this.#scripts.keys());
  }

  stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    return this.#play(request);
  }

  async *#play(request: ModelRequest): AsyncGenerator<ModelEvent, void, undefined> {
    if (request.signal.aborted) throw abortError(request.signal);
    const { steps, usage } = this.#choose(request);
    yield* playSteps(steps, request.signal, { inputTokens: estimateTokens(requestChars(request)), ...(usage ? { usage } : {}) });
  }

  /** The steps of this call and the script's default usage (see the class comment). */
  #choose(request: ModelRequest): { steps: ScriptStep[]; usage?: Partial<TokenUsage> } {
    const latest = latestUserText(request.messages);
    const call = latest ? request.messages.slice(latest.index + 1).filter((m) => m.role === "assistant").length : 0;
    const inline = latest ? inlineScriptText(latest.text) : undefined;
    const script = inline !== undefined ? parseInline(inline) : this.#scripts.get(request.model);
    if (script) return { steps: stepsOf(script.responses[call], request.messages), ...(script.usage ? { usage: script.usage } : {}) };
    if (request.model !== defaultScriptedModel) {
      throw new ModelError(`scripted model "${request.model}" has no script`, { retryable: false, status: 404 });
    }
    return { steps: echoSteps(latest) };
  }
}

function parseInline(json: string): Script {
  try {
    return parseScript(JSON.parse(json) as unknown, "script");
  } catch (err) {
    const reason = err instanceof ScriptError || err instanceof SyntaxError ? err.message : String(err);
    throw new ModelError(`invalid inline script: ${reason}`, { retryable: false, status: 400, cause: err });
  }
}

function echoSteps(latest: ReturnType<typeof latestUserText>): ScriptStep[] {
  const text = latest?.text.trim() ?? "";
  const images = latest?.message.parts.filter((p) => p.type === "image").length ?? 0;
  const attached = images > 0 ? ` (with ${images} image${images === 1 ? "" : "s"})` : "";
  return [
    { thinking: `The user wrote ${text.length} characters${attached}. I will echo them back.` },
    { text: text === "" ? `You said nothing${attached}.` : `You said: ${text}${attached}` },
  ];
}

/** Characters a conversation's messages hold, kept up as it grows; an image counts as a typical small image (~340 tokens). */
const messageChars = foldByFirstItem<ModelMessage, number>(
  () => 0,
  (chars, message) => {
    for (const part of message.parts) {
      if (part.type === "text") chars += part.text.length;
      else if (part.type === "thinking") chars += part.thinking.length;
      else if (part.type === "tool_use") chars += part.name.length + JSON.stringify(part.input).length;
      else if (part.type === "tool_result") chars += part.content.length;
      else chars += 340 * 4;
    }
    return chars;
  },
);

/** Characters the provider would read. */
function requestChars(request: ModelRequest): number {
  let chars = request.system.reduce((n, s) => n + s.length, 0);
  for (const tool of request.tools) chars += tool.name.length + tool.description.length + JSON.stringify(tool.parameters).length;
  return chars + messageChars(request.messages);
}
