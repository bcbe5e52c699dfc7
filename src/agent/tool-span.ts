import type { PlannedCall } from "./tool-gate.ts";
import type { ToolCallRecord, Tracing } from "./types.ts";

/**
 * Runs one tool call inside its `execute_tool` span: from the request (a client tool's
 * `tool_request`, a server tool's start) to its result, timeout or cancellation. A server
 * tool runs with the span active, so what it starts (a team worker, an MCP request) is its child.
 */
export async function tracedCall<T extends { record: ToolCallRecord }>(
  tracing: Tracing,
  call: PlannedCall,
  onServer: boolean,
  run: () => Promise<T>,
): Promise<T> {
  const span = tracing.startTool({ name: call.name, callId: call.id, arguments: call.parameters, onServer });
  const startedAt = Date.now();
  try {
    const done = await span.run(run);
    span.end(done.record);
    return done;
  } catch (err) {
    // A bug of the agent's own (the turn ends with agent_error): the span still ends.
    span.end({ id: call.id, name: call.name, parameters: call.parameters, permission: "allowed", error: "agent error", startedAt, endedAt: Date.now() });
    throw err;
  }
}
