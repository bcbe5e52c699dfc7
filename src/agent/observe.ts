import type { ClientTool } from "./types.ts";

/**
 * OODA observation tools. Convention: a client tool is an observation tool when its name
 * starts with `observe_` or ends with `__observe` (the second form suits tools registered
 * with a `source`, e.g. `camera__observe`). In `ooda_re_act` mode the server calls every
 * observation tool with `{}` parameters at the start of each cycle, before the model
 * decides; the calls are ordinary tool requests (same permissions, timeouts, ids).
 */
export function isObservationTool(tool: Pick<ClientTool, "name">): boolean {
  return tool.name.startsWith("observe_") || tool.name.endsWith("__observe");
}

/** The observation tools of a tool list, in list order. */
export function observationTools(tools: readonly ClientTool[]): ClientTool[] {
  return tools.filter(isObservationTool);
}
