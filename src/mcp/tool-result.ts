import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { ToolOutcome } from "../agent/index.ts";

/**
 * An MCP call result as a tool outcome: text content joins as the result text, structured
 * content joins as JSON, other content is named; `isError` makes it a failed result.
 */
export function outcomeOf(result: CallToolResult, durationMs: number): ToolOutcome {
  const parts = (result.content ?? []).map((c) => (c.type === "text" ? c.text : `[${c.type} content]`));
  if (result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  return { success: result.isError !== true, result: parts.join("\n"), truncated: false, durationMs };
}
