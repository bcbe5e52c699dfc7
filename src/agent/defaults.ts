import { DEFAULT_TOOL_RESULT_ECHO_BYTES } from "./tool-echo.ts";
import type { AgentLimits } from "./types.ts";

/**
 * The limits of session-behaviour.md §2–§5 when nothing is configured. Frozen: build
 * per-session limits with `{ ...defaultAgentLimits, ...overrides }`.
 */
export const defaultAgentLimits: Readonly<AgentLimits> = Object.freeze({
  maxCycles: 200,
  toolErrorLimit: 3,
  approvalTimeoutMs: 300_000,
  defaultToolTimeoutMs: 120_000,
  toolResultMaxTokens: 8_000,
  toolResultEchoBytes: DEFAULT_TOOL_RESULT_ECHO_BYTES,
});

/** `max_context_tokens` when the session configures none. */
export const defaultMaxContextTokens = 200_000;
