import type { JsonObject as PbJsonObject } from "@bufbuild/protobuf";
import { RozError } from "../errors/index.ts";
import { type JsonObject, MAX_JSON_DEPTH, tooDeepAt } from "../models/index.ts";

/**
 * A protobuf `Struct` decodes to a JSON object; absent means `{}`. Deeper than
 * MAX_JSON_DEPTH is refused with `invalid_argument` naming `field`.
 */
export function json(value: PbJsonObject | undefined, field: string): JsonObject {
  if (value !== undefined && tooDeepAt(value) !== undefined) {
    throw new RozError("invalid_argument", `${field} is nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
  return (value ?? {}) as JsonObject;
}
