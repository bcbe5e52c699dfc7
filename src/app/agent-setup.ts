import type { AgentLimits, PermissionRule } from "../agent/index.ts";
import { createModelCatalog, type ModelCatalog } from "../models/index.ts";
import type { Config } from "./config.ts";
import type { Metrics } from "./metrics.ts";
import { parsePermissionRules } from "./permission-rules.ts";

/** What every agent loop of this app (sessions' and workers') runs under. */
export interface AgentSettings {
  readonly limits: AgentLimits;
  /** `ROZ_PERMISSION_RULES`: applied after an environment's own rules. */
  readonly defaultPermissions: PermissionRule[];
}

/** The model catalog: `given` (a test's or benchmark's), else the providers `Config` names; every model call is timed. */
export function modelsOf(config: Config, given: ModelCatalog | undefined, metrics: Metrics): ModelCatalog {
  return metrics.timeModels(
    given ??
      createModelCatalog({
        ...(config.openaiApiKey ? { openaiApiKey: config.openaiApiKey } : {}),
        ...(config.openaiBaseURL ? { openaiBaseURL: config.openaiBaseURL } : {}),
        ...(config.openaiApi ? { openaiApi: config.openaiApi } : {}),
        ...(config.anthropicApiKey ? { anthropicApiKey: config.anthropicApiKey } : {}),
        ...(config.anthropicBaseURL ? { anthropicBaseURL: config.anthropicBaseURL } : {}),
        ...(config.anthropicThinkingBudget ? { anthropicThinkingBudget: config.anthropicThinkingBudget } : {}),
        ...(config.providersFile ? { providersFile: config.providersFile } : {}),
        ...(config.defaultModel ? { defaultModel: config.defaultModel } : {}),
      }),
  );
}

export function agentSettingsOf(config: Config): AgentSettings {
  return {
    limits: {
      maxCycles: config.maxCycles,
      toolErrorLimit: config.toolErrorLimit,
      approvalTimeoutMs: config.approvalTimeoutMs,
      defaultToolTimeoutMs: config.defaultToolTimeoutMs,
      toolResultMaxTokens: config.toolResultMaxTokens,
      toolResultEchoBytes: config.toolResultEchoBytes,
      maxTools: config.maxTools,
      maxToolsPerRequest: config.maxToolsPerRequest,
    },
    defaultPermissions: parsePermissionRules(config.permissionRules),
  };
}
