import { principalOf } from "../src/auth/index.ts";
import type { ConversationControl, SessionRegistry } from "../src/session/index.ts";
import type { Store } from "../src/store/index.ts";
import { errorResponses, idParams, type RoutePlugin } from "./schemas.ts";
import { type SessionRoutesOptions, sessionDetail, sessionDetailSchema } from "./sessions.ts";

export interface ConversationRoutesOptions extends Pick<SessionRoutesOptions, "waitingInputs"> {
  control: Pick<ConversationControl, "fork" | "rollback">;
  store: Pick<Store, "getSession" | "lastEventSeq">;
  registry: Pick<SessionRegistry, "get">;
}

const forkBody = {
  type: "object",
  properties: { through_turn: { type: "integer", minimum: 0, description: "copy turns 1..through_turn (default: through the last ended turn)" } },
  additionalProperties: false,
} as const;

const rollbackBody = {
  type: "object",
  properties: { turns: { type: "integer", minimum: 0, description: "how many of the last completed turns to roll back" } },
  required: ["turns"],
  additionalProperties: false,
} as const;

const rolledBackSchema = {
  type: "object",
  properties: { turns: { type: "integer" }, remaining_turns: { type: "integer" } },
  required: ["turns", "remaining_turns"],
} as const;

/** `/sessions/{id}/fork` and `/sessions/{id}/rollback` (under `/v1`): conversation control without a stream (§11). */
export const conversationRoutes: RoutePlugin<ConversationRoutesOptions> = async (app, { control, store, registry, waitingInputs }) => {
  const config = { scope: "sessions" } as const;
  const tags = ["sessions"];

  app.post(
    "/sessions/:id/fork",
    {
      config,
      schema: {
        summary: "Fork a session's conversation into a new session (detached, waiting for an attach)",
        tags,
        params: idParams,
        body: forkBody,
        response: { 201: sessionDetailSchema, ...errorResponses(404, 422) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const id = await control.fork(principal, request.params.id, request.body?.through_turn);
      return reply.status(201).send(await sessionDetail({ store, registry, waitingInputs }, principal.tenantId, id));
    },
  );

  app.post(
    "/sessions/:id/rollback",
    {
      config,
      schema: {
        summary: "Hide the session's last completed turns from the model (the transcript keeps them, marked)",
        tags,
        params: idParams,
        body: rollbackBody,
        response: { 200: rolledBackSchema, ...errorResponses(404, 412, 503) },
      },
    },
    async (request) => {
      const result = await control.rollback(principalOf(request), request.params.id, request.body.turns);
      return { turns: result.turns, remaining_turns: result.remainingTurns };
    },
  );
};
