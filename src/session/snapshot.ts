import type { ClientTool, PermissionRule } from "../agent/index.ts";
import { sharedJson, type StoredText, TextParts } from "../domain/index.ts";
import type { ModelMessage } from "../models/index.ts";
import type { WaitingInput } from "./waiting-inputs.ts";

/**
 * Everything needed to continue a session in another process: what the agent was built
 * from and what it has become (history, tools, pending system context), and the last seq.
 * Stored with every turn and on detach as a small state row (`SessionStateRow`) and its
 * message lists a row per message, of which each write stores only what changed
 * (`StoredHistory`). Sessions stored before message rows have it whole in their state.
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
  /** Its model is offered the team tools (environment or server default at start); absent: not. */
  teams?: boolean;
  tools: ClientTool[];
  history: readonly ModelMessage[];
  pendingSystemContext?: string;
  lastSeq: number;
  /** The turn that was running when this was stored (written as a turn starts): cut if the process died. */
  runningTurn?: RunningTurnInfo;
  /** The number of the last turn started (every turn counts, §11); absent in older snapshots. */
  lastTurn?: number;
  /** The conversation the session started with (`StartSession.history`, or a fork's copy): a rollback rebuilds from it. */
  startHistory?: readonly ModelMessage[];
  /** User messages that waited (queued, steers not yet seen, interrupts), in the order they are taken. */
  waitingInputs?: WaitingInput[];
}

/** The state row: the snapshot without its message lists, with their lengths (each list's first rows are its messages). */
export interface SessionStateRow extends Omit<SessionSnapshot, "version" | "history" | "startHistory"> {
  version: 2;
  historyLength: number;
  /** Present when the session has a start history. */
  startHistoryLength?: number;
}

/** What is known of a running turn before it ends: enough to record it as interrupted. */
export interface RunningTurnInfo {
  messageId: string;
  userContent: string;
  mode: "react" | "ooda_re_act";
  startedAt: number;
  /** Its number; absent in older snapshots. */
  turn?: number;
}

/** The parts of a snapshot fixed at start. */
export type SessionOrigin = Pick<
  SessionSnapshot,
  "environmentId" | "projectContext" | "instructions" | "systemPrompt" | "maxContextTokens" | "permissions" | "teams" | "startHistory"
>;

/** The fixed parts of a stored snapshot. */
export const originOf = (snapshot: SessionSnapshot): SessionOrigin => ({
  environmentId: snapshot.environmentId,
  projectContext: snapshot.projectContext,
  ...(snapshot.instructions !== undefined ? { instructions: snapshot.instructions } : {}),
  ...(snapshot.systemPrompt !== undefined ? { systemPrompt: snapshot.systemPrompt } : {}),
  maxContextTokens: snapshot.maxContextTokens,
  permissions: snapshot.permissions,
  ...(snapshot.teams ? { teams: true } : {}),
  ...(snapshot.startHistory !== undefined ? { startHistory: snapshot.startHistory } : {}),
});

const BYTES = "$bytes";

const withBinaryAsBase64 = (_key: string, value: unknown): unknown =>
  value instanceof Uint8Array ? { [BYTES]: Buffer.from(value).toString("base64") } : value;

/** Encoded texts at least this long are kept as shared UTF-8 bytes rather than strings. */
const SHARED_CHARS = 64 * 1024;

/**
 * `value` as JSON, binary parts (images, binary context) as `{"$bytes": base64}`. A long one
 * is escaped a slice per event-loop turn and held as shared UTF-8 bytes, which reach the
 * store's thread without a copy (see `sharedJson`).
 */
export async function encodeJson(value: unknown): Promise<StoredText> {
  const json = await sharedJson(value, withBinaryAsBase64, SHARED_CHARS);
  return typeof json === "string" ? json : new TextParts([json]);
}

/** The value of JSON that `encodeJson` made (binary parts back as Uint8Array); throws when it is not JSON. */
export function decodeJson(text: string): unknown {
  return JSON.parse(text, (_key, v: unknown) => {
    if (v !== null && typeof v === "object" && typeof (v as Record<string, unknown>)[BYTES] === "string" && Object.keys(v).length === 1) {
      const buf = Buffer.from((v as Record<string, string>)[BYTES]!, "base64");
      return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    }
    return v;
  });
}

/**
 * The state stored in `text`: a state row, or a whole snapshot (written before message rows,
 * history inline); undefined when it is neither.
 */
export function decodeState(text: string): SessionStateRow | SessionSnapshot | undefined {
  try {
    const value = decodeJson(text) as SessionStateRow | SessionSnapshot | null;
    return value?.version === 1 || value?.version === 2 ? value : undefined;
  } catch {
    return undefined;
  }
}
