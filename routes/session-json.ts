/** The REST shape of a session, and its schema. */
import type { Session, SessionStatus } from "../src/store/index.ts";
import { iso, timeSchema, usageJson, usageSchema } from "./schemas.ts";

export const sessionStatuses: SessionStatus[] = ["active", "detached", "completed", "cancelled", "error"];

export const sessionSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    environment_id: { type: "string" },
    model: { type: "string", description: "resolved provider/model" },
    status: { type: "string", enum: sessionStatuses },
    title: { type: "string", description: "StartSession.title, or as last patched" },
    metadata: { type: "object", additionalProperties: { type: "string" }, description: "StartSession.metadata, or as last patched" },
    archived: { type: "boolean", description: "archived sessions are left out of lists unless asked for" },
    host_id: { type: "string" },
    node_id: { type: "string" },
    created_at: timeSchema,
    updated_at: timeSchema,
    ended_at: timeSchema,
    usage: usageSchema,
    turn_count: { type: "integer" },
    compaction_count: { type: "integer" },
  },
  required: ["id", "environment_id", "model", "status", "metadata", "archived", "created_at", "updated_at", "usage", "turn_count", "compaction_count"],
} as const;

/** The REST shape of a session. */
export const sessionJson = (s: Session) => ({
  id: s.id,
  environment_id: s.environmentId,
  model: s.model,
  status: s.status,
  ...(s.title !== undefined ? { title: s.title } : {}),
  metadata: s.metadata,
  archived: s.archived,
  ...(s.hostId !== undefined ? { host_id: s.hostId } : {}),
  ...(s.nodeId !== undefined ? { node_id: s.nodeId } : {}),
  created_at: iso(s.createdAt),
  updated_at: iso(s.updatedAt),
  ...(s.endedAt !== undefined ? { ended_at: iso(s.endedAt) } : {}),
  usage: usageJson(s.usage),
  turn_count: s.turnCount,
  compaction_count: s.compactionCount,
});
