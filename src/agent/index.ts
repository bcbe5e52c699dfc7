export * from "./types.ts";
export { createAgent } from "./agent.ts";
export { defaultAgentLimits, defaultMaxContextTokens } from "./defaults.ts";
export { defaultPermissionRules } from "./permissions.ts";
export { isObservationTool } from "./observe.ts";
export { toAgentMode } from "./mode.ts";
export { buildUserMessage } from "./prompt.ts";
export { countTokens } from "./tokens.ts";
export { compactionThresholds } from "./compaction.ts";
