import type { JsonObject as PbJsonObject } from "@bufbuild/protobuf";
import type { JsonObject } from "../models/index.ts";

/** A protobuf `Struct` decodes to a JSON object; absent means `{}`. */
export const json = (value: PbJsonObject | undefined): JsonObject => (value ?? {}) as JsonObject;
