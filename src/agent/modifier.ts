import type { JsonObject, JsonValue } from "../models/index.ts";

/** The JSON type of a value, as a client sees it: integers and fractions are both numbers. */
function jsonTypeOf(value: JsonValue): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

export type ModifiedArguments = { ok: true; parameters: JsonObject } | { ok: false; message: string };

/**
 * Merges an approval's `modifier` into a call's arguments (session-behaviour.md §9): it may
 * only change the values of keys the arguments already have, each to a value of the same
 * JSON type. Anything else (a new key, another type) refuses the whole modifier, so that a
 * call runs exactly as approved or not at all. An empty or absent modifier changes nothing.
 */
export function applyModifier(parameters: JsonObject, modifier: JsonObject | undefined): ModifiedArguments {
  if (modifier === undefined) return { ok: true, parameters };
  for (const [key, value] of Object.entries(modifier)) {
    if (!Object.hasOwn(parameters, key)) return { ok: false, message: `the modifier adds "${key}", which the call's arguments do not have` };
    const was = jsonTypeOf(parameters[key]!);
    const now = jsonTypeOf(value);
    if (was !== now) return { ok: false, message: `the modifier changes "${key}" from ${was} to ${now}` };
  }
  return { ok: true, parameters: { ...parameters, ...modifier } };
}
