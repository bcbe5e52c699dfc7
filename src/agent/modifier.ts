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
 * JSON type; inside a nested object the same holds for its keys (an object value is merged
 * into the one it changes, not swapped for it). Anything else (a new key at any depth,
 * another type) refuses the whole modifier, so that a call runs exactly as approved or not at
 * all. An empty or absent modifier changes nothing.
 */
export function applyModifier(parameters: JsonObject, modifier: JsonObject | undefined): ModifiedArguments {
  if (modifier === undefined) return { ok: true, parameters };
  return merged(parameters, modifier, "");
}

const isObject = (value: JsonValue): value is JsonObject => jsonTypeOf(value) === "object";

function merged(target: JsonObject, modifier: JsonObject, path: string): ModifiedArguments {
  const out: JsonObject = { ...target };
  for (const [key, value] of Object.entries(modifier)) {
    const name = `${path}${key}`;
    if (!Object.hasOwn(target, key)) return { ok: false, message: `the modifier adds "${name}", which the call's arguments do not have` };
    const current = target[key]!;
    const was = jsonTypeOf(current);
    const now = jsonTypeOf(value);
    if (was !== now) return { ok: false, message: `the modifier changes "${name}" from ${was} to ${now}` };
    if (isObject(current) && isObject(value)) {
      const inner = merged(current, value, `${name}.`);
      if (!inner.ok) return inner;
      out[key] = inner.parameters;
    } else {
      out[key] = value;
    }
  }
  return { ok: true, parameters: out };
}
