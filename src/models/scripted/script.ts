/**
 * The scripted provider's script language (documented for client developers in
 * `README.md` next to this file): its types, its validation, and how a script is found
 * inline in a user message.
 */
import type { FinishReason, JsonObject, ModelMessage, TokenUsage } from "../types.ts";

/** Token counts as scripts write them (snake_case, like the providers file; camelCase accepted). */
export type ScriptUsage = Partial<TokenUsage>;

/** One thing a scripted model response does, in order. */
export type ScriptStep =
  | { text: string }
  | { thinking: string }
  | { tool_call: { id?: string; name: string; arguments: JsonObject } }
  | { usage: ScriptUsage }
  | { finish: FinishReason }
  | { delay_ms: number }
  | { error: { message: string; retryable: boolean; status?: number } };

/**
 * A script: `responses[k]` is played by the k-th model call after the latest user text
 * message; `usage`, when given, is reported by every response that has no `usage` step.
 */
export interface Script {
  responses: ScriptStep[][];
  usage?: ScriptUsage;
}

const finishReasons: readonly FinishReason[] = ["end_turn", "tool_use", "max_tokens", "content_filter"];
const usageKeys: Record<string, keyof TokenUsage> = {
  input_tokens: "inputTokens",
  output_tokens: "outputTokens",
  cache_read_tokens: "cacheReadTokens",
  cache_creation_tokens: "cacheCreationTokens",
  inputTokens: "inputTokens",
  outputTokens: "outputTokens",
  cacheReadTokens: "cacheReadTokens",
  cacheCreationTokens: "cacheCreationTokens",
};

/** A script that does not validate; `message` names the offending path. */
export class ScriptError extends Error {
  override readonly name = "ScriptError";
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Validates a parsed script (from JSON or YAML) and returns it typed. Throws ScriptError
 * whose message starts with `path` (e.g. `responses[0][1].tool_call.name: …`).
 */
export function parseScript(value: unknown, path = "script"): Script {
  if (!isObject(value)) throw new ScriptError(`${path}: must be an object with a "responses" list`);
  const { responses, usage, ...rest } = value;
  const unknownKey = Object.keys(rest)[0];
  if (unknownKey !== undefined) throw new ScriptError(`${path}.${unknownKey}: unknown field (expected responses, usage)`);
  if (!Array.isArray(responses)) throw new ScriptError(`${path}.responses: must be a list of responses`);
  const script: Script = {
    responses: responses.map((response, k) => {
      const at = `${path}.responses[${k}]`;
      if (!Array.isArray(response)) throw new ScriptError(`${at}: must be a list of steps`);
      return response.map((step, i) => parseStep(step, `${at}[${i}]`));
    }),
  };
  if (usage !== undefined) script.usage = parseUsage(usage, `${path}.usage`);
  return script;
}

function parseStep(step: unknown, at: string): ScriptStep {
  if (!isObject(step)) throw new ScriptError(`${at}: must be an object such as {"text": "…"}`);
  const keys = Object.keys(step);
  if (keys.length !== 1) throw new ScriptError(`${at}: must have exactly one key (text, thinking, tool_call, usage, finish, delay_ms, error)`);
  const kind = keys[0]!;
  const value = step[kind];
  switch (kind) {
    case "text":
    case "thinking":
      if (typeof value !== "string") throw new ScriptError(`${at}.${kind}: must be a string`);
      return kind === "text" ? { text: value } : { thinking: value };
    case "tool_call": {
      if (!isObject(value)) throw new ScriptError(`${at}.tool_call: must be an object with name and arguments`);
      if (typeof value.name !== "string" || value.name === "") throw new ScriptError(`${at}.tool_call.name: must be a non-empty string`);
      if (value.id !== undefined && (typeof value.id !== "string" || value.id === "")) throw new ScriptError(`${at}.tool_call.id: must be a non-empty string`);
      const args = value.arguments ?? {};
      if (!isObject(args)) throw new ScriptError(`${at}.tool_call.arguments: must be an object`);
      return { tool_call: { name: value.name, arguments: args as JsonObject, ...(value.id ? { id: value.id as string } : {}) } };
    }
    case "usage":
      return { usage: parseUsage(value, `${at}.usage`) };
    case "finish":
      if (!finishReasons.includes(value as FinishReason)) throw new ScriptError(`${at}.finish: must be one of ${finishReasons.join(", ")}`);
      return { finish: value as FinishReason };
    case "delay_ms":
      if (typeof value !== "number" || !Number.isFinite(value) || value < 0) throw new ScriptError(`${at}.delay_ms: must be a number ≥ 0`);
      return { delay_ms: value };
    case "error":
      return { error: parseErrorStep(value, `${at}.error`) };
    default:
      throw new ScriptError(`${at}.${kind}: unknown step (expected text, thinking, tool_call, usage, finish, delay_ms, error)`);
  }
}

function parseErrorStep(value: unknown, at: string): { message: string; retryable: boolean; status?: number } {
  if (typeof value === "string") return { message: value, retryable: false };
  if (!isObject(value)) throw new ScriptError(`${at}: must be a message string or {message, retryable, status}`);
  const { message = "scripted model error", retryable = false, status } = value;
  if (typeof message !== "string") throw new ScriptError(`${at}.message: must be a string`);
  if (typeof retryable !== "boolean") throw new ScriptError(`${at}.retryable: must be true or false`);
  if (status !== undefined && (!Number.isInteger(status) || (status as number) < 100 || (status as number) > 599)) {
    throw new ScriptError(`${at}.status: must be an HTTP status (100-599)`);
  }
  return { message, retryable, ...(status !== undefined ? { status: status as number } : {}) };
}

function parseUsage(value: unknown, at: string): ScriptUsage {
  if (!isObject(value)) throw new ScriptError(`${at}: must be an object of token counts`);
  const usage: ScriptUsage = {};
  for (const [key, count] of Object.entries(value)) {
    const field = usageKeys[key];
    if (!field) throw new ScriptError(`${at}.${key}: unknown field (expected input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens)`);
    if (!Number.isInteger(count) || (count as number) < 0) throw new ScriptError(`${at}.${key}: must be an integer ≥ 0`);
    usage[field] = count as number;
  }
  return usage;
}

/** The latest user message that carries text (not just tool results), and its position. */
export function latestUserText(messages: readonly ModelMessage[]): { index: number; message: ModelMessage; text: string } | undefined {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index]!;
    if (message.role !== "user" || message.parts.some((p) => p.type === "tool_result")) continue;
    const texts = message.parts.flatMap((p) => (p.type === "text" ? [p.text] : []));
    if (texts.length > 0) return { index, message, text: texts.join("\n") };
  }
  return undefined;
}

/**
 * The JSON text of an inline script in a user message: the message starts with `script:`,
 * or contains a fenced block whose info string is `script`. Undefined when there is none.
 */
export function inlineScriptText(text: string): string | undefined {
  const trimmed = text.trimStart();
  if (trimmed.startsWith("script:")) return trimmed.slice("script:".length);
  const fenced = /```script[ \t]*\r?\n([\s\S]*?)```/.exec(text);
  return fenced?.[1];
}
