import { RozError } from "../errors/index.ts";
import type { ClientTool } from "./types.ts";

/**
 * The session's tool list after a `register_tools` (session-behaviour.md §3). With a
 * `source`, every tool named `{source}__…` is replaced by `tools` (an empty list
 * unregisters the source). Without one, `tools` are added and a tool with the name of an
 * existing one replaces it in place. Names stay unique; order is kept.
 */
export function applyRegistration(
  current: readonly ClientTool[],
  source: string | undefined,
  tools: readonly ClientTool[],
  maxTools = Number.POSITIVE_INFINITY,
): ClientTool[] {
  const kept = source === undefined || source === "" ? [...current] : current.filter((t) => !t.name.startsWith(`${source}__`));
  const merged = mergeByName(kept, tools);
  if (merged.length > maxTools) {
    throw new RozError("invalid_argument", `register_tools would give the session ${merged.length} tools; at most ${maxTools} are allowed`);
  }
  return merged;
}

/** `base` with each of `added` appended, or replacing the tool of the same name; linear in both. */
export function mergeByName(base: readonly ClientTool[], added: readonly ClientTool[]): ClientTool[] {
  const out = [...base];
  const indexOf = new Map(out.map((t, i) => [t.name, i]));
  for (const tool of added) {
    const i = indexOf.get(tool.name);
    if (i !== undefined) out[i] = tool;
    else indexOf.set(tool.name, out.push(tool) - 1);
  }
  return out;
}

/** The effective timeout of a tool: its schema's, else the default. */
export function toolTimeoutMs(tool: ClientTool, defaultMs: number): number {
  return tool.timeoutMs > 0 ? tool.timeoutMs : defaultMs;
}
