import { MAX_JSON_DEPTH, tooDeepAt } from "./json-depth.ts";
import { isPlainObject } from "./plain-object.ts";
import type { JsonObject, ModelEvent } from "./types.ts";

/**
 * Builds the `tool_call` event from the raw argument text a model streamed. Empty text
 * means no arguments (`{}`); text that is not a JSON object yields `{}` plus
 * `invalidArguments`, so one malformed call from a small model does not fail the turn.
 */
export function toolCallEvent(id: string, name: string, raw: string): Extract<ModelEvent, { type: "tool_call" }> {
  if (raw.trim() === "") return { type: "tool_call", id, name, arguments: {} };
  try {
    const parsed: unknown = JSON.parse(raw);
    if (isPlainObject(parsed)) return { type: "tool_call", id, name, arguments: parsed as JsonObject };
  } catch {
    // fall through: reported as invalid below
  }
  return { type: "tool_call", id, name, arguments: {}, invalidArguments: raw };
}

/** An id for a tool call the provider sent without one (some local servers do). */
export function generatedCallId(): string {
  return `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
}

/**
 * Why a tool call's arguments cannot go to the client, as the end of a sentence about them
 * (told to the model); undefined when they can. Text that was not a JSON object (`invalid`, as
 * `toolCallEvent` keeps it) is refused, and so are arguments nested deeper than clients may send
 * (MAX_JSON_DEPTH): protobuf decoders refuse such a `ToolRequest` as a whole, failing the call.
 */
export function argumentsFault(parameters: JsonObject, invalid: string | undefined): string | undefined {
  if (invalid !== undefined) return `are not a JSON object: ${invalid.slice(0, 200)}`;
  if (tooDeepAt(parameters) !== undefined) return `are nested deeper than ${MAX_JSON_DEPTH} levels`;
  return undefined;
}
