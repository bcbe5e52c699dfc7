import type { ClientTool, PermissionRule } from "../agent/index.ts";
import type { ModelMessage } from "../models/index.ts";

/**
 * Everything needed to continue a session in another process: what the agent was built
 * from and what it has become (history, tools, pending system context), and the last seq.
 * Stored as JSON with every turn and on detach.
 */
export interface SessionSnapshot {
  version: 1;
  model: string;
  environmentId: string;
  projectContext: string[];
  instructions?: string;
  /** The client's own system prompt (v0.2 `system` history messages). */
  systemPrompt?: string[];
  maxContextTokens: number;
  permissions: PermissionRule[];
  tools: ClientTool[];
  history: ModelMessage[];
  pendingSystemContext?: string;
  lastSeq: number;
  /** The turn that was running when this was stored (written as a turn starts): cut if the process died. */
  runningTurn?: RunningTurnInfo;
}

/** What is known of a running turn before it ends: enough to record it as interrupted. */
export interface RunningTurnInfo {
  messageId: string;
  userContent: string;
  mode: "react" | "ooda_re_act";
  startedAt: number;
}

/** The parts of a snapshot fixed at start. */
export type SessionOrigin = Pick<SessionSnapshot, "environmentId" | "projectContext" | "instructions" | "systemPrompt" | "maxContextTokens" | "permissions">;

const BYTES = "$bytes";

/** JSON with binary parts (images, binary context) as `{"$bytes": base64}`. */
export function encodeSnapshot(snapshot: SessionSnapshot): string {
  return JSON.stringify(snapshot, (_key, value: unknown) => (value instanceof Uint8Array ? { [BYTES]: Buffer.from(value).toString("base64") } : value));
}

/** The snapshot in `text`; undefined when it is not one this server writes. */
export function decodeSnapshot(text: string): SessionSnapshot | undefined {
  try {
    const value = JSON.parse(text, (_key, v: unknown) => {
      if (v !== null && typeof v === "object" && typeof (v as Record<string, unknown>)[BYTES] === "string" && Object.keys(v).length === 1) {
        const buf = Buffer.from((v as Record<string, string>)[BYTES]!, "base64");
        return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
      }
      return v;
    }) as SessionSnapshot;
    return value?.version === 1 ? value : undefined;
  } catch {
    return undefined;
  }
}
