import type { AgentMode } from "./types.ts";

/**
 * The agent mode of a wire `ai_mode` (session-behaviour.md §2): empty or `react` →
 * `react`; `ooda_re_act`, `ooda`, `ooda_react` → `ooda_re_act` (case-insensitive).
 * Undefined for anything else: the caller runs it as `react` (as v0.2 did) and logs it.
 */
export function toAgentMode(aiMode: string | undefined): AgentMode | undefined {
  const m = (aiMode ?? "").trim().toLowerCase();
  if (m === "" || m === "react") return "react";
  if (m === "ooda_re_act" || m === "ooda" || m === "ooda_react") return "ooda_re_act";
  return undefined;
}
