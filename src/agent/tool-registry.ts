import type { ClientTool } from "./types.ts";

/**
 * The session's tool list after a `register_tools` (session-behaviour.md §3). With a
 * `source`, every tool named `{source}__…` is replaced by `tools` (an empty list
 * unregisters the source). Without one, `tools` are added and a tool with the name of an
 * existing one replaces it in place. Names stay unique; order is kept.
 */
export function applyRegistration(current: readonly ClientTool[], source: string | undefined, tools: readonly ClientTool[]): ClientTool[] {
  const kept = source === undefined || source === "" ? [...current] : current.filter((t) => !t.name.startsWith(`${source}__`));
  return mergeByName(kept, tools);
}

/** `base` with each of `added` appended, or replacing the tool of the same name. */
export function mergeByName(base: readonly ClientTool[], added: readonly ClientTool[]): ClientTool[] {
  const out = [...base];
  for (const tool of added) {
    const i = out.findIndex((t) => t.name === tool.name);
    if (i >= 0) out[i] = tool;
    else out.push(tool);
  }
  return out;
}

/** The effective timeout of a tool: its schema's, else the default. */
export function toolTimeoutMs(tool: ClientTool, defaultMs: number): number {
  return tool.timeoutMs > 0 ? tool.timeoutMs : defaultMs;
}
