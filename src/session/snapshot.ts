import type { ClientTool, PermissionRule } from "../agent/index.ts";
import { sharedJson, TextParts } from "../domain/index.ts";
import type { ModelMessage } from "../models/index.ts";
import type { WaitingInput } from "./waiting-inputs.ts";

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

/** Encoded parts at least this long are kept as shared UTF-8 bytes rather than strings. */
const SHARED_PART_CHARS = 64 * 1024;

/**
 * The JSON of each history message and of the running turn, kept as long as the part lives:
 * they never change once made, and a snapshot is stored at every turn, so each is encoded
 * once rather than at every turn. Large ones are kept as shared bytes, which reach the store's
 * thread without a copy: a long history or a multi-megabyte message then costs the event loop
 * nothing at later turns.
 */
const encodedParts = new WeakMap<object, string | Uint8Array | Promise<string | Uint8Array>>();

function encodeOnce(part: object): string | Uint8Array | Promise<string | Uint8Array> {
  let encoded = encodedParts.get(part);
  if (encoded === undefined) {
    encoded = sharedJson(part, withBinaryAsBase64, SHARED_PART_CHARS).then((done) => {
      encodedParts.set(part, done);
      return done;
    });
    encodedParts.set(part, encoded);
  }
  return encoded;
}

/**
 * JSON with binary parts (images, binary context) as `{"$bytes": base64}`, as parts a store
 * joins. What is encoded is what `snapshot` holds when called: its parts never change.
 */
export async function encodeSnapshot(snapshot: SessionSnapshot): Promise<TextParts> {
  const { history, runningTurn, startHistory, ...rest } = snapshot;
  const parts: (string | Uint8Array | Promise<string | Uint8Array>)[] = [JSON.stringify(rest, withBinaryAsBase64).slice(0, -1)];
  if (runningTurn !== undefined) parts.push(',"runningTurn":', encodeOnce(runningTurn));
  const pushMessages = (key: string, messages: readonly ModelMessage[]): void => {
    parts.push(`,"${key}":[`);
    messages.forEach((message, i) => {
      if (i > 0) parts.push(",");
      parts.push(encodeOnce(message));
    });
    parts.push("]");
  };
  if (startHistory !== undefined) pushMessages("startHistory", startHistory);
  pushMessages("history", history);
  parts.push("}");
  return new TextParts(parts.some((p) => p instanceof Promise) ? await Promise.all(parts) : (parts as (string | Uint8Array)[]));
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
