import type { Attributes } from "@opentelemetry/api";
import {
  ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
} from "@opentelemetry/semantic-conventions/incubating";
import type { TokenUsage } from "../domain/index.ts";

/** Token usage as GenAI attributes (input tokens include the cached ones, as roz counts them). */
export function usageAttributes(usage: TokenUsage): Attributes {
  return {
    [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: usage.inputTokens,
    [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: usage.outputTokens,
    ...(usage.cacheReadTokens > 0 ? { [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: usage.cacheReadTokens } : {}),
    ...(usage.cacheCreationTokens > 0 ? { [ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS]: usage.cacheCreationTokens } : {}),
  };
}
