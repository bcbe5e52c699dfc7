/**
 * The scripted provider's script language (documented for client developers in
 * `README.md` next to this file): its types, its validation, and how a script is found
 * inline in a user message.
 */
import { isPlainObject } from "../plain-object.ts";
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
 * One model answer: its steps, or two lists of steps of which `failed` plays when a tool
 * result the model has just received is an error (a failed tool, a denied or timed-out
 * approval, a call refused by a rule) and `ok` plays otherwise.
 */
export type ScriptResponse = ScriptStep[] | { ok: ScriptStep[]; failed: ScriptStep[] };

/**
 * A script: `responses[k]` is played by the k-th model call after the latest user text
 * message; `usage`, when given, is reported by every response that has no `usage` step.
 */
export interface Script {
  responses: ScriptResponse[];
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

/** A script that does not validate: `path` names the offending field, `detail` what is wrong. */
export class ScriptError extends Error {
  override readonly name = "ScriptError";
  readonly path: string;
  readonly detail: string;
  constructor(path: string, detail: string) {
    super(`${path}: ${detail}`);
    this.path = path;
    this.detail = detail;
  }
}

const stepKinds = "text, thinking, tool_call, usage, finish, delay_ms, error";
const usageNames = "input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens";

/** Throws ScriptError(path, detail) unless `ok`. */
function check(ok: boolean, path: string, detail: string): asserts ok {
  if (!ok) throw new ScriptError(path, detail);
}

/**
 * Validates a parsed script (from JSON or YAML) and returns it typed. Throws ScriptError
 * naming the offending field (e.g. `script.responses[0][1].tool_call.name`).
 */
export function parseScript(value: unknown, path = "script"): Script {
  check(isPlainObject(value), path, 'must be an object with a "responses" list');
  const { responses, usage, ...rest } = value as Record<string, unknown>;
  const unknownKey = Object.keys(rest)[0];
  check(unknownKey === undefined, `${path}.${unknownKey}`, "unknown field (expected responses, usage)");
  check(Array.isArray(responses), `${path}.responses`, "must be a list of responses");
  const script: Script = {
    responses: (responses as unknown[]).map((response, k) => parseResponse(response, `${path}.responses[${k}]`)),
  };
  if (usage !== undefined) script.usage = parseUsage(usage, `${path}.usage`);
  return script;
}

function parseResponse(response: unknown, at: string): ScriptResponse {
  if (!isPlainObject(response)) return parseSteps(response, at);
  const { ok, failed, ...rest } = response as Record<string, unknown>;
  const unknownKey = Object.keys(rest)[0];
  check(unknownKey === undefined, `${at}.${unknownKey}`, "unknown field (expected ok, failed)");
  return { ok: parseSteps(ok ?? [], `${at}.ok`), failed: parseSteps(failed ?? [], `${at}.failed`) };
}

function parseSteps(steps: unknown, at: string): ScriptStep[] {
  check(Array.isArray(steps), at, 'must be a list of steps (or {"ok": […], "failed": […]})');
  return (steps as unknown[]).map((step, i) => parseStep(step, `${at}[${i}]`));
}

/** The steps of `response` for a call whose request ends with `messages`' last message (see ScriptResponse). */
export function stepsOf(response: ScriptResponse | undefined, messages: readonly ModelMessage[]): ScriptStep[] {
  if (response === undefined) return [];
  if (Array.isArray(response)) return response;
  const last = messages.at(-1);
  const failed = last?.role === "user" && last.parts.some((p) => p.type === "tool_result" && p.isError);
  return failed ? response.failed : response.ok;
}

function parseStep(step: unknown, at: string): ScriptStep {
  check(isPlainObject(step), at, 'must be an object such as {"text": "…"}');
  const keys = Object.keys(step as object);
  check(keys.length === 1, at, `must have exactly one key (${stepKinds})`);
  const kind = keys[0]!;
  const value = (step as Record<string, unknown>)[kind];
  const field = `${at}.${kind}`;
  switch (kind) {
    case "text":
    case "thinking":
      check(typeof value === "string", field, "must be a string");
      return kind === "text" ? { text: value as string } : { thinking: value as string };
    case "tool_call": {
      check(isPlainObject(value), field, "must be an object with name and arguments");
      const { name, id, arguments: args = {} } = value as Record<string, unknown>;
      check(typeof name === "string" && name !== "", `${field}.name`, "must be a non-empty string");
      check(id === undefined || (typeof id === "string" && id !== ""), `${field}.id`, "must be a non-empty string");
      check(isPlainObject(args), `${field}.arguments`, "must be an object");
      return { tool_call: { name: name as string, arguments: args as JsonObject, ...(id ? { id: id as string } : {}) } };
    }
    case "usage":
      return { usage: parseUsage(value, field) };
    case "finish":
      check(finishReasons.includes(value as FinishReason), field, `must be one of ${finishReasons.join(", ")}`);
      return { finish: value as FinishReason };
    case "delay_ms":
      check(typeof value === "number" && Number.isFinite(value) && value >= 0, field, "must be a number ≥ 0");
      return { delay_ms: value as number };
    case "error":
      return { error: parseErrorStep(value, field) };
    default:
      throw new ScriptError(field, `unknown step (expected ${stepKinds})`);
  }
}

function parseErrorStep(value: unknown, at: string): { message: string; retryable: boolean; status?: number } {
  if (typeof value === "string") return { message: value, retryable: false };
  check(isPlainObject(value), at, "must be a message string or {message, retryable, status}");
  const { message = "scripted model error", retryable = false, status } = value as Record<string, unknown>;
  check(typeof message === "string", `${at}.message`, "must be a string");
  check(typeof retryable === "boolean", `${at}.retryable`, "must be true or false");
  const validStatus = Number.isInteger(status) && (status as number) >= 100 && (status as number) <= 599;
  check(status === undefined || validStatus, `${at}.status`, "must be an HTTP status (100-599)");
  return { message: message as string, retryable: retryable as boolean, ...(status !== undefined ? { status: status as number } : {}) };
}

function parseUsage(value: unknown, at: string): ScriptUsage {
  check(isPlainObject(value), at, "must be an object of token counts");
  const usage: ScriptUsage = {};
  for (const [key, count] of Object.entries(value as Record<string, unknown>)) {
    const field = usageKeys[key];
    check(field !== undefined, `${at}.${key}`, `unknown field (expected ${usageNames})`);
    check(Number.isInteger(count) && (count as number) >= 0, `${at}.${key}`, "must be an integer ≥ 0");
    usage[field!] = count as number;
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
