/**
 * True for an object as JSON and YAML parsers make them (not null, not an array): the one
 * shape check of tool arguments, scripts and the providers file.
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
