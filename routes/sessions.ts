import { principalOf } from "../src/auth/index.ts";
import { RozError } from "../src/errors/index.ts";
import type { SessionRegistry, WaitingInputView } from "../src/session/index.ts";
import type { JsonValue } from "../src/domain/index.ts";
import { type Session, sessionEndReasons, type Store, type StoredTurn } from "../src/store/index.ts";
import {
  budgetJson,
  budgetSchema,
  errorResponses,
  idParams,
  iso,
  pageSchema,
  type RoutePlugin,
  timeSchema,
  toPage,
  usageJson,
  usageSchema,
} from "./schemas.ts";
import { sessionFilterOf, sessionListQuery, statuses } from "./session-filters.ts";
import { turnJson } from "./transcript.ts";

export interface SessionRoutesOptions {
  store: Pick<Store, "getSession" | "listSessions" | "listTurns" | "updateSessionStatus" | "lastEventSeq">;
  /** The live sessions of this process: DELETE ends a running one first. */
  registry: Pick<SessionRegistry, "get" | "end">;
  /** With several nodes: asks the node that runs a session (not this one) to end it. */
  endOnOwner?: (tenantId: string, sessionId: string, ownerNode: string, reason: string) => Promise<void>;
  /** A transcript as the wire's conversation messages, in protobuf JSON (the RPC layer's encoding). */
  conversationJson: (turns: readonly StoredTurn[]) => JsonValue[];
  /** The user messages that wait in a session, wherever it runs (as last stored when not here). */
  waitingInputs: (tenantId: string, sessionId: string) => Promise<WaitingInputView[]>;
}

export const sessionSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    environment_id: { type: "string" },
    model: { type: "string", description: "resolved provider/model" },
    status: { type: "string", enum: statuses },
    title: { type: "string", description: "StartSession.title, or as last patched" },
    metadata: { type: "object", additionalProperties: { type: "string" }, description: "StartSession.metadata, or as last patched" },
    archived: { type: "boolean", description: "archived sessions are left out of lists unless asked for" },
    host_id: { type: "string" },
    node_id: { type: "string" },
    created_at: timeSchema,
    updated_at: timeSchema,
    ended_at: timeSchema,
    end_reason: {
      type: "string",
      enum: sessionEndReasons,
      description:
        "why an ended session ended: completed (the last client half-closed), client (cancel_session or DELETE), abandoned (nobody re-attached within the detach grace), error",
    },
    usage: usageSchema,
    budget: { ...budgetSchema, description: "StartSession.budget (its environment's budget applies too; the lower limit wins)" },
    spent: {
      type: "object",
      properties: { tokens: { type: "integer" }, cost_usd: { type: "number" } },
      required: ["tokens", "cost_usd"],
      description: "what its model calls spent over its life, its team workers' included: what its budgets count",
    },
    turn_count: { type: "integer" },
    compaction_count: { type: "integer" },
  },
  required: ["id", "environment_id", "model", "status", "metadata", "archived", "created_at", "updated_at", "usage", "spent", "turn_count", "compaction_count"],
} as const;

/** One session in detail: also how many streams are attached here and its last response seq. */
export const sessionDetailSchema = {
  ...sessionSchema,
  properties: {
    ...sessionSchema.properties,
    attached_streams: { type: "integer", description: "streams attached to the session on this server" },
    last_seq: { type: "integer", description: "seq of the session's last response (resume with after_seq up to it)" },
    queued_inputs: {
      type: "array",
      description: "user messages waiting to start a turn or to join the running one, in the order they will be taken",
      items: {
        type: "object",
        properties: {
          message_id: { type: "string" },
          content: { type: "string" },
          delivery: { type: "string", enum: ["queue", "steer", "interrupt"] },
          queue_position: { type: "integer", description: "1 = next to start; 0 for steers and interrupts" },
        },
        required: ["message_id", "content", "delivery", "queue_position"],
      },
    },
  },
  required: [...sessionSchema.required, "attached_streams", "last_seq", "queued_inputs"],
} as const;

const formats = ["both", "conversation", "turns"] as const;

const messagesQuery = {
  type: "object",
  properties: {
    format: {
      type: "string",
      enum: formats,
      default: "both",
      description: "conversation: `messages` (ConversationMessage JSON for StartSession.history); turns: `turns`; both: both",
    },
  },
  additionalProperties: false,
} as const;

const anyObject = { type: "object", additionalProperties: true } as const;

const messagesSchema = {
  type: "object",
  properties: {
    session_id: { type: "string" },
    messages: { type: "array", items: anyObject, description: "roz.v1.ConversationMessage in protobuf JSON" },
    turns: { type: "array", items: anyObject },
  },
  required: ["session_id"],
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
  ...(s.endReason !== undefined ? { end_reason: s.endReason } : {}),
  usage: usageJson(s.usage, s.costUsd),
  ...(s.budget !== undefined ? { budget: budgetJson(s.budget) } : {}),
  spent: { tokens: s.spent.tokens, cost_usd: s.spent.costUsd },
  turn_count: s.turnCount,
  compaction_count: s.compactionCount,
});

const notFound = (id: string) => new RozError("not_found", `session "${id}" not found`);

/** A session as `GET /v1/sessions/{id}` shows it; `not_found` when unknown or another tenant's. */
export async function sessionDetail(
  {
    store,
    registry,
    waitingInputs,
  }: Pick<SessionRoutesOptions, "waitingInputs"> & { store: Pick<Store, "getSession" | "lastEventSeq">; registry: Pick<SessionRegistry, "get"> },
  tenantId: string,
  id: string,
) {
  const session = await store.getSession(tenantId, id);
  if (!session) throw notFound(id);
  const live = registry.get(tenantId, id);
  const waiting = session.status === "active" || session.status === "detached" ? await waitingInputs(tenantId, id) : [];
  return {
    ...sessionJson(session),
    attached_streams: live?.attachedStreams ?? 0,
    last_seq: live?.lastSeq ?? (await store.lastEventSeq(tenantId, id)) ?? 0,
    queued_inputs: waiting.map((w) => ({ message_id: w.messageId, content: w.content, delivery: w.delivery, queue_position: w.queuePosition })),
  };
}

/**
 * `/sessions` (under `/v1`): list, get, transcript, and DELETE — which ends a live session (status
 * `cancelled`) but keeps its stored transcript, usage and events: sessions are an audit
 * record, and there is no store operation that erases them.
 */
export const sessionRoutes: RoutePlugin<SessionRoutesOptions> = async (app, { store, registry, endOnOwner, conversationJson, waitingInputs }) => {
  const config = { scope: "sessions" } as const;
  const tags = ["sessions"];

  app.get(
    "/sessions",
    {
      config,
      schema: {
        summary: "List sessions, newest first: filtered, searched, paged by cursor",
        tags,
        querystring: sessionListQuery,
        response: { 200: pageSchema(sessionSchema), ...errorResponses() },
      },
    },
    async (request) => {
      const page = await store.listSessions(principalOf(request).tenantId, sessionFilterOf(request.query));
      return toPage(page, sessionJson);
    },
  );

  app.get(
    "/sessions/:id",
    { config, schema: { summary: "Get a session with its usage", tags, params: idParams, response: { 200: sessionDetailSchema, ...errorResponses(404) } } },
    async (request) => sessionDetail({ store, registry, waitingInputs }, principalOf(request).tenantId, request.params.id),
  );

  app.get(
    "/sessions/:id/messages",
    {
      config,
      schema: {
        summary: "The transcript: as ConversationMessages and/or per turn with tool calls",
        tags,
        params: idParams,
        querystring: messagesQuery,
        response: { 200: messagesSchema, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const { format } = request.query;
      const turns = await store.listTurns(principalOf(request).tenantId, id);
      if (!turns) throw notFound(id);
      return {
        session_id: id,
        ...(format !== "turns" ? { messages: conversationJson(turns) } : {}),
        ...(format !== "conversation" ? { turns: turns.map(turnJson) } : {}),
      };
    },
  );

  app.delete(
    "/sessions/:id",
    {
      config,
      schema: {
        summary: "End a session (cancelled); its stored transcript is kept",
        tags,
        params: idParams,
        response: { 204: { type: "null", description: "ended (or had already ended)" }, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const tenantId = principalOf(request).tenantId;
      const record = await store.getSession(tenantId, id);
      if (!record) throw notFound(id);
      const live = registry.get(tenantId, id);
      if (live) await registry.end(live, "cancelled", "session deleted through the REST API");
      else if (endOnOwner && record.nodeId && (record.status === "active" || record.status === "detached")) {
        // Live on another node: that node ends it (a node that no longer answers leaves the store update below).
        await endOnOwner(tenantId, id, record.nodeId, "session deleted through the REST API").catch((err: unknown) =>
          request.log.warn({ err, sessionId: id, node: record.nodeId }, "the session's node did not answer; marking it cancelled in the store"),
        );
      }
      // Also for a session the store still thinks is running but this process does not hold.
      await store.updateSessionStatus(tenantId, id, { status: "cancelled", from: ["active", "detached"] });
      return reply.status(204).send(null);
    },
  );
};
