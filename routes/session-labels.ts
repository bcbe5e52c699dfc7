import { principalOf } from "../src/auth/index.ts";
import { metadataProblem, SESSION_LABEL_LIMITS, titleProblem } from "../src/domain/index.ts";
import { RozError } from "../src/errors/index.ts";
import type { SessionPatch, Store } from "../src/store/index.ts";
import { errorResponses, idParams, type RoutePlugin } from "./schemas.ts";
import { sessionJson, sessionSchema } from "./sessions.ts";

export interface SessionLabelRoutesOptions {
  store: Pick<Store, "updateSession">;
}

const { titleChars, metadataPairs, keyChars, valueChars } = SESSION_LABEL_LIMITS;

const patchBody = {
  type: "object",
  properties: {
    title: { type: ["string", "null"], maxLength: titleChars, description: `up to ${titleChars} characters; null or "" removes it` },
    metadata: {
      type: "object",
      maxProperties: metadataPairs,
      propertyNames: { minLength: 1, maxLength: keyChars },
      additionalProperties: { type: ["string", "null"], maxLength: valueChars },
      description: `keys given are set, keys given as null removed; at most ${metadataPairs} keys after the change`,
    },
    archived: { type: "boolean" },
  },
  additionalProperties: false,
} as const;

/** `PATCH /sessions/{id}` (under `/v1`): a session's title, metadata and archived flag. */
export const sessionLabelRoutes: RoutePlugin<SessionLabelRoutesOptions> = async (app, { store }) => {
  app.patch(
    "/sessions/:id",
    {
      config: { scope: "sessions" },
      schema: {
        summary: "Change a session's title, metadata or archived flag",
        tags: ["sessions"],
        params: idParams,
        body: patchBody,
        response: { 200: sessionSchema, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const { title, metadata, archived } = request.body;
      const problem =
        (typeof title === "string" ? titleProblem(title, "title") : undefined) ?? (metadata !== undefined ? metadataProblem(metadata, "metadata") : undefined);
      if (problem !== undefined) throw new RozError("invalid_argument", problem);
      const patch: SessionPatch = {
        ...(title !== undefined ? { title } : {}),
        ...(metadata !== undefined ? { metadata: metadata } : {}),
        ...(archived !== undefined ? { archived } : {}),
      };
      const session = await store.updateSession(principalOf(request).tenantId, id, patch);
      if (!session) throw new RozError("not_found", `session "${id}" not found`);
      return sessionJson(session);
    },
  );
};
